"""segatron-import hf-albert and segatron-export hf of ALBERT against transformers==4.35.2 (random models saved
with save_pretrained, every parameter drawn at a visible scale): logits to 1e-5 both ways."""
import json

import pytest
import torch
import transformers
from conftest import run_cli
from test_huggingface_importers import _inputs, _load
from transformers_newest import newest_outputs

assert transformers.__version__ == "4.35.2", transformers.__version__

VOCAB_SIZE = 60


ALBERT_PIECES = dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"])


def _spiece(directory, vocab_size=VOCAB_SIZE, **special_pieces):
    """A sentencepiece model of ``vocab_size`` whole-word pieces (words w0x..w79x), its special pieces laid out
    by ``special_pieces`` (the trainer's options; default ALBERT's: <pad> <unk> [CLS] [SEP] [MASK] first)."""
    import sentencepiece as spm

    text = directory / "spm.txt"
    words = [f"w{i}x" for i in range(80)]
    text.write_text("\n".join(" ".join(words[(k * 7 + j) % 80] for j in range(12)) for k in range(200)) + "\n")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(directory / "spiece"), vocab_size=vocab_size,
                                   model_type="word", minloglevel=2, hard_vocab_limit=True,
                                   **(special_pieces or ALBERT_PIECES))
    (directory / "spiece.vocab").unlink()
    text.unlink()


def _hf_albert(directory, pretraining=True, groups=2, tied=True):
    """A random AlbertForPreTraining (or AlbertForMaskedLM): 4 layers in ``groups`` groups, E 16, H 32, gelu_new,
    eps 1e-12, 40 positions, saved with save_pretrained beside an ALBERT-style spiece.model."""
    from transformers import AlbertConfig, AlbertForMaskedLM, AlbertForPreTraining

    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = AlbertConfig(vocab_size=VOCAB_SIZE, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                          num_hidden_groups=groups, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=40, type_vocab_size=2, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0, hidden_act="gelu_new",
                          tie_word_embeddings=tied)
    model = (AlbertForPreTraining if pretraining else AlbertForMaskedLM)(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(1.0 if "LayerNorm.weight" in name or "layer_norm.weight" in name else 0.0, 0.3)
    model.save_pretrained(directory)
    _spiece(directory)
    return model


@pytest.mark.parametrize("pretraining,groups,tied", [(True, 2, True), (False, 1, True), (False, 2, False)])
def test_hf_albert_reproduces_its_logits(tmp_path, pretraining, groups, tied):
    """MLM logits of the real positions (padding, both token types) to 1e-5; AlbertForPreTraining's SOP logits
    from the imported sentence_order head; each group stored once under its first layer."""
    from segatron_fairseq.conversion.importers.albert import map_albert_vocabulary
    from segatron_fairseq.conversion.importers.sentencepiece_vocabulary import read_sentencepiece_vocab

    hf_model = _hf_albert(tmp_path / "hf", pretraining, groups, tied)
    run_cli("segatron-import", "hf-albert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    model, task = _load(tmp_path / "imported" / "checkpoint.pt")
    args = model.args
    assert len(model.encoder.segment_embeddings) == 0 and args.share_encoder_layers == "all"
    assert args.encoder_layer_groups == groups and args.factorized_embed_dim == 16
    assert args.activation_fn == "gelu_accurate" and task.cfg.sentence_order_prediction == pretraining
    assert args.untie_weights_roberta == (not tied)
    stored = {k.split(".")[3] for k in torch.load(tmp_path / "imported" / "checkpoint.pt", weights_only=False)[
        "model"] if ".layers." in k}
    assert stored == ({"0"} if groups == 1 else {"0", "2"})
    index = map_albert_vocabulary(read_sentencepiece_vocab(str(tmp_path / "hf" / "spiece.model")), "v").index
    ids, attention_mask, token_type = _inputs(VOCAB_SIZE)
    with torch.no_grad():
        theirs = hf_model(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_type)
        ours, _ = model(index[ids], token_type=token_type)
    real = attention_mask.bool()
    their_logits = theirs.prediction_logits if pretraining else theirs.logits
    torch.testing.assert_close(ours[..., index][real], their_logits[real], rtol=0, atol=1e-5)
    assert task.dictionary[int(index[4])] == "<mask>" and task.dictionary[int(index[0])] == "<pad>"
    assert task.dictionary[int(index[2])] == "<s>" and task.dictionary[int(index[3])] == "</s>"
    if pretraining:
        with torch.no_grad():
            sop, _ = model(index[ids], token_type=token_type, features_only=True,
                           classification_head_name="sentence_order")
        torch.testing.assert_close(sop, theirs.sop_logits, rtol=0, atol=1e-5)


def test_hf_albert_refusals_name_the_file(tmp_path):
    _hf_albert(tmp_path / "hf", pretraining=False)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "inner_group_num": 2}))
    out = run_cli("segatron-import", "hf-albert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "config.json: inner_group_num 2" in out
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "model_type": "bert"}))
    out = run_cli("segatron-import", "hf-albert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "model_type is 'bert', not 'albert'" in out
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    (tmp_path / "hf" / "spiece.model").unlink()
    out = run_cli("segatron-import", "hf-albert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "no sentencepiece model (spiece.model)" in out
    assert not (tmp_path / "x").exists()


def _train_albert(corpus, save_dir, arch, *extra):
    from conftest import fairseq_train

    fairseq_train(corpus, task="segabert_mlm", arch=arch, criterion="masked_lm_sop", save_dir=save_dir, lr=3e-3,
                  extra=["--sentence-order-prediction", "--encoder-layers", 4, "--encoder-embed-dim", 32,
                         "--encoder-ffn-embed-dim", 64, "--encoder-attention-heads", 4, "--factorized-embed-dim",
                         16, "--tokens-per-sample", 32, "--batch-size", 8, "--max-update", 2,
                         "--no-epoch-checkpoints", "--disable-validation", *extra])
    return save_dir / "checkpoint_last.pt"


@pytest.mark.end_to_end
@pytest.mark.parametrize("extra", [("--encoder-layer-groups", 2), ("--share-encoder-layers", "none")])
def test_albert_baseline_exports_to_albert_for_masked_lm(segabert_corpus, tmp_path, extra):
    """A trained segabert_bert_albert model (factorized, layers shared in 2 groups, or not shared: a group per
    layer) as AlbertForMaskedLM: transformers' logits (4.35.2 and the newest) equal ours to 1e-5 (padding, both
    token types)."""
    from transformers import AlbertForMaskedLM

    from segatron_fairseq.models.segabert import SegaBERTModel

    checkpoint = _train_albert(segabert_corpus, tmp_path / "ckpt", "segabert_bert_albert_base", *extra)
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", segabert_corpus,
                  "--out", tmp_path / "hf")
    assert "sentence_order are not exported" in out
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["AlbertForMaskedLM"] and config["hidden_act"] == "gelu_new"
    assert config["num_hidden_groups"] == (2 if extra[0] == "--encoder-layer-groups" else 4)
    hub = SegaBERTModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(segabert_corpus))
    model = hub.model.eval()
    ids = torch.randint(4, len(hub.task.source_dictionary) - 1, (2, 20), generator=torch.Generator().manual_seed(3))
    ids[:, 0], ids[0, 15:], ids[1, -1] = 0, 1, 2  # <s> ... <pad>, </s>
    token_type = torch.zeros_like(ids)
    token_type[1, 10:] = 1
    real = ids.ne(1)
    with torch.no_grad():
        exported = AlbertForMaskedLM.from_pretrained(tmp_path / "hf").eval()
        theirs = exported(input_ids=ids, attention_mask=real.long(), token_type_ids=token_type).logits
        ours, _ = model(ids, token_type=token_type)
    torch.testing.assert_close(ours[real], theirs[real], rtol=0, atol=1e-5)
    newest = newest_outputs(tmp_path, tmp_path / "hf", "AlbertForMaskedLM",
                            dict(input_ids=ids, attention_mask=real.long(), token_type_ids=token_type))
    torch.testing.assert_close(newest[real], theirs[real], rtol=0, atol=1e-5)


@pytest.mark.end_to_end
def test_export_refuses_factorized_segabert_and_partial_sharing(segabert_corpus, tmp_path):
    """With index tables, a factorized model has no Hugging Face class; nor has attention-only sharing: one line
    each, nothing written."""
    checkpoint = _train_albert(segabert_corpus, tmp_path / "a", "segabert_albert_base")
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", segabert_corpus,
                  "--out", tmp_path / "hf", expect_ok=False)
    assert "a SegaBERT model with a factorized embedding or shared layers has no Hugging Face class" in out
    checkpoint = _train_albert(segabert_corpus, tmp_path / "b", "segabert_bert_albert_base",
                               "--share-encoder-layers", "attention")
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", segabert_corpus,
                  "--out", tmp_path / "hf", expect_ok=False)
    assert "--share-encoder-layers attention: ALBERT shares whole layers (all) or none" in out
    assert not (tmp_path / "hf").exists()


def test_layer_groups_that_hugging_face_assigns_otherwise_are_refused():
    """HF's AlbertTransformer computes int(l / (L / G)); for L 18, G 14 layer 9 that is group 6, ALBERT's
    floor(l * G / L) is 7: such a layout is refused both ways, the usual ones pass."""
    from transformers import AlbertConfig
    from transformers.models.albert.modeling_albert import AlbertTransformer

    from segatron_fairseq.conversion.bert_names import check_hf_layer_groups
    from segatron_fairseq.modules.shared_layers import layer_groups

    config = AlbertConfig(num_hidden_layers=18, num_hidden_groups=14, hidden_size=8, embedding_size=4,
                          num_attention_heads=2, intermediate_size=8)
    transformer = AlbertTransformer(config)
    used = []
    for number, group in enumerate(transformer.albert_layer_groups):
        group.register_forward_hook(lambda module, args, output, number=number: used.append(number))
    transformer(torch.zeros(1, 3, 4))
    assert used != layer_groups(18, 14) and used[9] == 6 and layer_groups(18, 14)[9] == 7
    with pytest.raises(NotImplementedError, match="14 layer groups of 18 layers"):
        check_hf_layer_groups(18, 14, "config.json")
    for num_layers, num_groups in ((12, 1), (12, 2), (12, 12), (24, 4)):
        check_hf_layer_groups(num_layers, num_groups, "config.json")
