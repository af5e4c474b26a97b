"""segatron-import hf-electra and segatron-export of the ELECTRA baseline, against transformers==4.35.2's
ElectraForPreTraining and ElectraForMaskedLM on small random models saved with save_pretrained."""
import pytest
import torch
import transformers
from conftest import run_cli
from test_huggingface_importers import _bert_vocab, _inputs, _load
from transformers_newest import newest_outputs

assert transformers.__version__ == "4.35.2", transformers.__version__
VOCAB = 60


def _hf_electra(directory, generator_embeddings_equal=True):
    """A random discriminator (H 32, E 16, 4 heads) and generator (H 16, 2 heads, 1 layer) with one copy of the
    embeddings (the generator's overwritten by the discriminator's unless asked otherwise), every parameter drawn
    at a visible scale; their vocab.txt beside each."""
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(0)
    shared = dict(vocab_size=VOCAB, embedding_size=16, max_position_embeddings=40, type_vocab_size=2,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    discriminator = ElectraForPreTraining(ElectraConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                        intermediate_size=64, **shared)).eval()
    generator = ElectraForMaskedLM(ElectraConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                                 intermediate_size=24, **shared)).eval()
    with torch.no_grad():
        for model in (discriminator, generator):
            for name, parameter in model.named_parameters():
                parameter.normal_(1.0 if "LayerNorm.weight" in name else 0.0, 0.3)
        if generator_embeddings_equal:
            generator.electra.embeddings.load_state_dict(discriminator.electra.embeddings.state_dict())
    for name, model in (("discriminator", discriminator), ("generator", generator)):
        model.save_pretrained(directory / name)
        (directory / name / "vocab.txt").write_text("\n".join(_bert_vocab(VOCAB)) + "\n")
    return discriminator, generator


def _assert_same_logits(model, discriminator, generator, index):
    """Discriminator logits and every generator MLM logit of the real tokens to 1e-5."""
    ids, attention_mask, token_type = _inputs(VOCAB)
    real = attention_mask.bool()
    with torch.no_grad():
        theirs = discriminator(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_type).logits
        torch.testing.assert_close(model.discriminate(index[ids], token_type=token_type)[real], theirs[real],
                                   rtol=0, atol=1e-5)
        theirs = generator(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_type).logits
        ours, _ = model.generator(index[ids], token_type=token_type)
        torch.testing.assert_close(ours[..., index][real], theirs[real], rtol=0, atol=1e-5)


def test_hf_electra_reproduces_the_discriminator_and_generator_logits(tmp_path):
    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece

    discriminator, generator = _hf_electra(tmp_path / "hf")
    run_cli("segatron-import", "hf-electra", "--discriminator", tmp_path / "hf" / "discriminator", "--generator",
            tmp_path / "hf" / "generator", "--out", tmp_path / "imported")
    model, task = _load(tmp_path / "imported" / "checkpoint.pt")
    assert type(model).__name__ == "SegaBERTElectraModel" and len(model.encoder.segment_embeddings) == 0
    assert model.generator.sentence_encoder.embed_tokens is model.encoder.sentence_encoder.embed_tokens
    assert len(model.generator.sentence_encoder.layers) == 1
    index = map_wordpiece(_bert_vocab(VOCAB), "vocab").index
    _assert_same_logits(model, discriminator, generator, index)
    assert task.dictionary[int(index[4])] == "<mask>"


def test_hf_electra_keeps_the_discriminators_embeddings_and_warns(tmp_path):
    discriminator, _ = _hf_electra(tmp_path / "hf", generator_embeddings_equal=False)
    out = run_cli("segatron-import", "hf-electra", "--discriminator", tmp_path / "hf" / "discriminator", "--generator",
                  tmp_path / "hf" / "generator", "--out", tmp_path / "imported")
    warning = next(line for line in out.splitlines() if "WARNING" in line)
    assert "generator/model.safetensors: the generator's embeddings differ from the discriminator's (" in warning
    assert "word_embeddings.weight" in warning and "the discriminator's are kept for both" in warning
    model, _ = _load(tmp_path / "imported" / "checkpoint.pt")
    theirs = discriminator.electra.embeddings.LayerNorm.weight
    torch.testing.assert_close(model.generator.sentence_encoder.layernorm_embedding.weight, theirs)


def test_hf_electra_refuses_directories_that_do_not_fit(tmp_path):
    import json

    _hf_electra(tmp_path / "hf")
    config_path = tmp_path / "hf" / "generator" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "embedding_size": 8}))
    out = run_cli("segatron-import", "hf-electra", "--discriminator", tmp_path / "hf" / "discriminator", "--generator",
                  tmp_path / "hf" / "generator", "--out", tmp_path / "x", expect_ok=False)
    assert "generator/config.json: the generator's embedding_size is 8, the discriminator's 16" in out
    config_path.write_text(json.dumps({**config, "model_type": "bert"}))
    out = run_cli("segatron-import", "hf-electra", "--discriminator", tmp_path / "hf" / "discriminator", "--generator",
                  tmp_path / "hf" / "generator", "--out", tmp_path / "x", expect_ok=False)
    assert "model_type is 'bert', not 'electra'" in out and not (tmp_path / "x").exists()


@pytest.fixture(scope="module")
def electra_export(tmp_path_factory):
    """Random Hugging Face ELECTRA directories imported, a WordPiece corpus binarized with their dictionary, and
    exported: (the folder holding model/ and hf/, our model, the inputs of both as the export's ids)."""
    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece

    tmp = tmp_path_factory.mktemp("electra_export")
    _hf_electra(tmp / "original")
    run_cli("segatron-import", "hf-electra", "--discriminator", tmp / "original" / "discriminator",
            "--generator", tmp / "original" / "generator", "--out", tmp / "model")
    words = " ".join(f"tok{i}" for i in range(5, 40))
    (tmp / "text.txt").write_text(f"{words} tok7ing.\n{words} tok9s tok1000.\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "text.txt", "--srcdict",
            tmp / "model" / "dict.txt", "--bpe", "wordpiece", "--bpe-vocab",
            tmp / "original" / "discriminator" / "vocab.txt", "--bpe-cased", "--destdir", tmp / "bin")
    run_cli("segatron-export", "hf", "--checkpoint", tmp / "model" / "checkpoint.pt", "--data", tmp / "bin",
            "--out", tmp / "hf")
    model, _ = _load(tmp / "model" / "checkpoint.pt")
    ids, attention_mask, token_type = _inputs(VOCAB)
    ids = map_wordpiece(_bert_vocab(VOCAB), "vocab").index[ids]  # the exported vocabulary keeps our ids
    return tmp, model, dict(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_type)


def _our_logits(model, inputs) -> dict:
    """Our discriminator's and generator's logits of ``inputs``, by exported directory."""
    with torch.no_grad():
        return {"discriminator": model.discriminate(inputs["input_ids"], token_type=inputs["token_type_ids"]),
                "generator": model.generator(inputs["input_ids"], token_type=inputs["token_type_ids"])[0]}


def test_the_baseline_exports_to_electra_classes_and_back(electra_export, tmp_path):
    """Import, binarize a WordPiece corpus with its dictionary, export: transformers 4.35.2 loads both directories
    and gives our logits to 1e-5 (the newest release: the next test); importing the export gives the same tensors."""
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    exported_at, model, inputs = electra_export
    ours = _our_logits(model, inputs)
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        for directory, exported_class in (("discriminator", ElectraForPreTraining),
                                          ("generator", ElectraForMaskedLM)):
            theirs = exported_class.from_pretrained(exported_at / "hf" / directory).eval()(**inputs).logits
            torch.testing.assert_close(theirs[real], ours[directory][real], rtol=0, atol=1e-5)
    run_cli("segatron-import", "hf-electra", "--discriminator", exported_at / "hf" / "discriminator", "--generator",
            exported_at / "hf" / "generator", "--out", tmp_path / "again")
    first = torch.load(exported_at / "model" / "checkpoint.pt", weights_only=False)["model"]
    again = torch.load(tmp_path / "again" / "checkpoint.pt", weights_only=False)["model"]
    assert again.keys() == first.keys()
    for key in first:
        torch.testing.assert_close(again[key], first[key], rtol=0, atol=0, msg=key)


@pytest.mark.end_to_end
def test_the_electra_export_loads_in_the_newest_release(electra_export, tmp_path):
    """The same two directories in the newest transformers release (a subprocess each): our logits to 1e-5."""
    exported_at, model, inputs = electra_export
    ours = _our_logits(model, inputs)
    real = inputs["attention_mask"].bool()
    for directory, class_name in (("discriminator", "ElectraForPreTraining"), ("generator", "ElectraForMaskedLM")):
        newest = newest_outputs(tmp_path, exported_at / "hf" / directory, class_name, inputs)
        torch.testing.assert_close(newest[real], ours[directory][real], rtol=0, atol=1e-5)


def test_export_refuses_an_electra_model_with_index_tables(electra_checkpoints, segabert_corpus, tmp_path):
    out = run_cli("segatron-export", "hf", "--checkpoint", electra_checkpoints["segabert_electra_tiny"], "--data",
                  segabert_corpus, "--out", tmp_path / "hf", expect_ok=False)
    assert "segatron-export: error: an ELECTRA model with index tables (segabert_electra_*) has no Hugging Face " \
           "class" in out
    assert not (tmp_path / "hf").exists() and not (tmp_path / "hf.partial").exists()


@pytest.mark.parametrize("name", ["discriminator", "generator"])
def test_hf_electra_names_a_directory_without_weights(tmp_path, name):
    _hf_electra(tmp_path / "hf")
    (tmp_path / "hf" / name / "model.safetensors").unlink()
    out = run_cli("segatron-import", "hf-electra", "--discriminator", tmp_path / "hf" / "discriminator", "--generator",
                  tmp_path / "hf" / "generator", "--out", tmp_path / "x", expect_ok=False)
    assert f"{name}: no weights (model.safetensors or pytorch_model.bin)" in out


@pytest.mark.parametrize("sharing", ["all", "attention"])
def test_a_layer_sharing_baseline_exports_with_each_layers_copy(tmp_path, sharing):
    """ELECTRA has no cross-layer sharing: a segabert_bert_electra model with --share-encoder-layers is written with
    the shared tensors in every layer, and transformers gives our logits to 1e-5."""
    from tiny_models import dictionary, tiny_model
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from segatron_fairseq.conversion.exporters import huggingface_electra

    vocabulary = dictionary(words=VOCAB - 4)
    model = tiny_model("segabert_bert_electra_tiny", "--criterion", "electra", "--share-encoder-layers", sharing,
                       "--dropout", 0, "--attention-dropout", 0, width=(), vocabulary=vocabulary)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(1.0 if "layer_norm.weight" in name or "layernorm" in name else 0.0, 0.3)
    huggingface_electra.export(model, vocabulary, None, str(tmp_path / "hf"))
    ids = torch.tensor([[0, 5, 6, 7, 8, 9, 2]])
    with torch.no_grad():
        theirs = ElectraForPreTraining.from_pretrained(tmp_path / "hf" / "discriminator").eval()(input_ids=ids)
        torch.testing.assert_close(theirs.logits, model.discriminate(ids), rtol=0, atol=1e-5)
        theirs = ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()(input_ids=ids)
        torch.testing.assert_close(theirs.logits, model.generator(ids)[0], rtol=0, atol=1e-5)
