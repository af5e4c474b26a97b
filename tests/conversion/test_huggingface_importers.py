"""segatron-import of Hugging Face checkpoints against the transformers classes that wrote them
(transformers==4.35.2, a test dependency installed by scripts/install.sh), on small random configs."""
import json

import pytest
import torch
import transformers
from conftest import run_cli

assert transformers.__version__ == "4.35.2", transformers.__version__


def _words(n):
    """A Transformer-XL vocabulary: <eos> first, <unk> in the head band."""
    return ["<eos>", "the", "<unk>"] + [f"w{i}" for i in range(3, n)]


def _hf_transformer_xl(directory, *, div_val, untie_r, cutoffs=(20, 50), vocab_size=100, safe=True, pickled=True):
    """A random TransfoXLLMHeadModel saved with save_pretrained, its vocabulary beside it; every parameter
    drawn at a visible scale (zeros would hide a misplaced bias)."""
    from transformers import TransfoXLConfig, TransfoXLLMHeadModel, TransfoXLTokenizer

    torch.manual_seed(0)
    config = TransfoXLConfig(vocab_size=vocab_size, cutoffs=list(cutoffs), d_model=32, d_embed=32, n_head=4,
                             d_head=8, d_inner=64, div_val=div_val, n_layer=2, mem_len=8, clamp_len=10,
                             same_length=True, untie_r=untie_r, dropout=0.0, dropatt=0.0)
    model = TransfoXLLMHeadModel(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(1.0 if "layer_norm.weight" in name else 0.0, 0.3)
    model.save_pretrained(directory, safe_serialization=safe)
    (directory / "vocab.txt").write_text("\n".join(_words(vocab_size)) + "\n")
    if pickled:
        TransfoXLTokenizer(vocab_file=str(directory / "vocab.txt")).save_vocabulary(str(directory))
        (directory / "vocab.txt").unlink()
    return model


def _assert_same_log_probs(hf_model, checkpoint, vocab_size, cutoffs):
    """3 segments of 6 tokens, 2 rows, memory carried: every log-probability of the vocabulary to 1e-5. The first
    segment gets an empty memory: without ``mems``, transformers' ``init_mems`` gives it mem_len zero states to
    attend to, which the original code (and ours) does not have."""
    from fairseq import checkpoint_utils

    from segatron_fairseq.conversion.importers.vocabulary import map_vocabulary

    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    model = models[0].eval()
    index = map_vocabulary(_words(vocab_size), list(cutoffs), "vocab").index
    tokens = torch.randint(0, vocab_size, (2, 18), generator=torch.Generator().manual_seed(1))
    memory = [torch.zeros(0, 2, 32) for _ in range(hf_model.config.n_layer)]
    model.reset_memory()
    with torch.no_grad():
        for start in range(0, 18, 6):
            segment = tokens[:, start:start + 6]
            theirs = hf_model(input_ids=segment, mems=memory)
            memory = theirs.mems
            ours = model.get_normalized_probs(model(index[segment]), log_probs=True)[..., index]
            torch.testing.assert_close(ours, theirs.prediction_scores, rtol=0, atol=1e-5)


def test_hf_transformer_xl_div_val_2_per_layer_biases_reproduces_its_log_probs(tmp_path):
    """div_val 2 (AdaptiveInput, per-band projections, tied ones restored from the safetensors file), one u, v per
    layer, same_length, clamp_len, the vocabulary from vocab.pkl."""
    hf_model = _hf_transformer_xl(tmp_path / "hf", div_val=2, untie_r=True)
    run_cli("segatron-import", "hf-transformer-xl", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported",
            "--tgt-len", 6)
    checkpoint = torch.load(tmp_path / "imported" / "checkpoint.pt", weights_only=False)
    model_cfg = checkpoint["cfg"]["model"]
    assert model_cfg["per_layer_position_biases"] and model_cfg["same_length"] and model_cfg["clamp_len"] == 10
    assert model_cfg["no_sentence_part"] and model_cfg["no_paragraph_part"]
    _assert_same_log_probs(hf_model, tmp_path / "imported" / "checkpoint.pt", 100, (20, 50))


def test_hf_transformer_xl_div_val_1_shared_biases_from_pytorch_model_bin(tmp_path):
    hf_model = _hf_transformer_xl(tmp_path / "hf", div_val=1, untie_r=False, safe=False, pickled=False)
    run_cli("segatron-import", "hf-transformer-xl", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported",
            "--tgt-len", 6)
    _assert_same_log_probs(hf_model, tmp_path / "imported" / "checkpoint.pt", 100, (20, 50))


def test_hf_transformer_xl_errors_name_the_file(tmp_path):
    _hf_transformer_xl(tmp_path / "hf", div_val=1, untie_r=True, pickled=False)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "vocab_size": 99}))
    out = run_cli("segatron-import", "hf-transformer-xl", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "vocab.txt has 100 words" in out and "says vocab_size 99" in out
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "model_type": "bert"}))
    out = run_cli("segatron-import", "hf-transformer-xl", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "config.json: model_type is 'bert', not 'transfo-xl'" in out
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    (tmp_path / "hf" / "model.safetensors").unlink()
    out = run_cli("segatron-import", "hf-transformer-xl", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "no weights (model.safetensors or pytorch_model.bin)" in out
    assert not (tmp_path / "x" / "checkpoint.pt").exists()


def _bert_vocab(n):
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(5, n - 2)] + ["##s", "##ing"]


def _inputs(vocab_size):
    """Two rows of 30 ids of a [PAD] [UNK] [CLS] [SEP] [MASK] ... vocabulary: [CLS] ... [SEP] then padding in the first,
    a [MASK] in the second; attention mask; token types 1 from position 12 of the second."""
    ids = torch.randint(5, vocab_size, (2, 30), generator=torch.Generator().manual_seed(2))
    ids[:, 0], ids[0, 19], ids[0, 20:], ids[1, -1] = 2, 3, 0, 3
    ids[1, 10] = 4
    token_type = torch.zeros_like(ids)
    token_type[1, 12:] = 1
    return ids, ids.ne(0).long(), token_type


def _load(checkpoint):
    """The model (eval) and task of a fairseq checkpoint."""
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    return models[0].eval(), task


def _hf_bert(directory, tied=True, model_class="BertForMaskedLM"):
    """A random ``model_class`` (BertForMaskedLM; BertModel, SpanBERT's hub layout without heads; ...) with 2
    token types, 40 positions, eps 1e-12, saved with save_pretrained, its vocab.txt beside it; every parameter
    drawn at a visible scale."""
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=40, type_vocab_size=2,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                     tie_word_embeddings=tied)
    model = getattr(transformers, model_class)(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(1.0 if "LayerNorm.weight" in name else 0.0, 0.3)
    model.save_pretrained(directory)
    (directory / "vocab.txt").write_text("\n".join(_bert_vocab(60)) + "\n")
    return model


@pytest.mark.parametrize("tied", [True, False])
def test_hf_bert_reproduces_bert_for_masked_lm_logits(tmp_path, tied):
    """BertForMaskedLM (token types, learned absolute positions, eps 1e-12), tied or untied output layer: every MLM
    logit of the real positions to 1e-5, with padding and both token types."""
    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece

    hf_model = _hf_bert(tmp_path / "hf", tied)
    run_cli("segatron-import", "hf-bert", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "imported" / "checkpoint.pt")])
    model = models[0].eval()
    assert len(model.encoder.segment_embeddings) == 0 and model.args.untie_weights_roberta == (not tied)
    index = map_wordpiece(_bert_vocab(60), "vocab").index
    ids = torch.randint(5, 60, (2, 30), generator=torch.Generator().manual_seed(2))
    ids[:, 0], ids[0, 19], ids[0, 20:], ids[1, -1] = 2, 3, 0, 3  # [CLS] ... [SEP] [PAD]...
    ids[1, 10] = 4  # a [MASK]
    attention_mask = ids.ne(0).long()
    token_type = torch.zeros_like(ids)
    token_type[1, 12:] = 1
    with torch.no_grad():
        theirs = hf_model(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_type).logits
        ours, _ = model(index[ids], token_type=token_type)
    real = attention_mask.bool()
    torch.testing.assert_close(ours[..., index][real], theirs[real], rtol=0, atol=1e-5)
    assert task.dictionary[int(index[4])] == "<mask>" and task.dictionary[int(index[0])] == "<pad>"
