"""SpanBERT and conversion: segatron-import hf-spanbert of random BertModel / BertForPreTraining directories
(SpanBERT's released layout; transformers==4.35.2) to 1e-5, and segatron-export of a checkpoint trained with the span
boundary objective (the head, which has no Hugging Face counterpart, left out) loaded by transformers to 1e-5 (4.35.2
and the newest)."""
import pytest
import torch
from conftest import fairseq_train, run_cli
from test_huggingface_importers import _bert_vocab, _hf_bert
from transformers_newest import newest_outputs


def _inputs():
    ids = torch.randint(5, 60, (2, 30), generator=torch.Generator().manual_seed(2))
    ids[:, 0], ids[0, 19], ids[0, 20:], ids[1, -1] = 2, 3, 0, 3  # [CLS] ... [SEP] [PAD]...
    return ids, ids.ne(0)


@pytest.mark.parametrize("model_class", ["BertModel", "BertForPreTraining"])
def test_hf_spanbert_reproduces_the_encoder(tmp_path, model_class):
    """Hidden states to 1e-5 (token type 0, as SpanBERT); a BertForPreTraining's MLM logits too, while a
    BertModel (no heads, as the hub's SpanBERT) gets a fresh MLM head: zero bias, decoder tied to the embeddings."""
    from fairseq import checkpoint_utils

    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece

    hf_model = _hf_bert(tmp_path / "hf", model_class=model_class)
    out = run_cli("segatron-import", "hf-spanbert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    assert "checkpoint.pt" in out
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "imported" / "checkpoint.pt")])
    model = models[0].eval()
    assert len(model.encoder.segment_embeddings) == 0  # the BERT baseline (segabert_bert)
    index = map_wordpiece(_bert_vocab(60), "vocab").index
    ids, real = _inputs()
    with torch.no_grad():
        bert = hf_model if model_class == "BertModel" else hf_model.bert
        theirs = bert(input_ids=ids, attention_mask=real.long()).last_hidden_state
        features, _ = model(index[ids], features_only=True)
        torch.testing.assert_close(features[real], theirs[real], rtol=0, atol=1e-5)
        head = model.encoder.lm_head
        assert head.weight is model.encoder.sentence_encoder.embed_tokens.weight
        if model_class == "BertForPreTraining":
            logits = hf_model(input_ids=ids, attention_mask=real.long()).prediction_logits
            torch.testing.assert_close(model(index[ids])[0][..., index][real], logits[real], rtol=0, atol=1e-5)
        else:
            assert not head.bias.any() and torch.equal(head.layer_norm.weight, torch.ones(32))
            assert 0.01 < float(head.dense.weight.std()) < 0.03


def test_hf_bert_still_needs_the_mlm_head(tmp_path):
    _hf_bert(tmp_path / "hf", model_class="BertModel")
    out = run_cli("segatron-import", "hf-bert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "not a BERT masked LM of this layout" in out and not (tmp_path / "x" / "checkpoint.pt").exists()


@pytest.fixture(scope="module")
def sbo_export(segabert_corpus, tmp_path_factory):
    """A segabert_bert_tiny trained two updates with the span boundary objective and exported: (the export's
    directory, what segatron-export printed, the hub of the checkpoint, an encoded pair)."""
    from segatron_fairseq.models.segabert import SegaBERTModel

    tmp = tmp_path_factory.mktemp("sbo_export")
    fairseq_train(segabert_corpus, task="segabert_mlm", arch="segabert_bert_tiny", criterion="span_boundary_mlm",
                  save_dir=tmp / "sbo", extra=["--mask-span", "span", "--span-boundary-objective",
                                               "--tokens-per-sample", 32, "--batch-size", 8, "--max-update", 2,
                                               "--no-epoch-checkpoints", "--disable-validation"])
    checkpoint = tmp / "sbo" / "checkpoint_last.pt"
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", segabert_corpus, "--out", tmp / "hf")
    hub = SegaBERTModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(segabert_corpus))
    return tmp / "hf", out, hub, hub.encode("the crab lives near a reef", "it hides under ledge")


def test_sbo_checkpoint_exports_without_its_head(sbo_export):
    """A segabert_bert_tiny trained with the span boundary objective exports as a plain BertForMaskedLM (a warning
    names the head left out); transformers' logits and hidden states equal ours to 1e-5 (the newest release: the
    next test)."""
    from transformers import BertForMaskedLM

    directory, out, hub, encoded = sbo_export
    assert "classification heads span_boundary are not exported" in out
    assert "span_boundary" in hub.model.head_names()
    exported = BertForMaskedLM.from_pretrained(directory).eval()
    with torch.no_grad():
        inputs = dict(input_ids=encoded["src_tokens"], token_type_ids=encoded["token_type"])
        torch.testing.assert_close(exported(**inputs).logits, hub.model(**encoded)[0], rtol=0, atol=1e-5)
        torch.testing.assert_close(exported.bert(**inputs).last_hidden_state, hub.extract_features(encoded),
                                   rtol=0, atol=1e-5)


@pytest.mark.end_to_end
def test_sbo_export_loads_in_the_newest_release(sbo_export, tmp_path):
    """The same export as BertForMaskedLM in the newest transformers release (a subprocess): our logits to 1e-5."""
    directory, _, hub, encoded = sbo_export
    inputs = dict(input_ids=encoded["src_tokens"], token_type_ids=encoded["token_type"])
    with torch.no_grad():
        ours = hub.model(**encoded)[0]
    torch.testing.assert_close(newest_outputs(tmp_path, directory, "BertForMaskedLM", inputs), ours, rtol=0,
                               atol=1e-5)
