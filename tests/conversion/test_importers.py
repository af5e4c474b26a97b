"""segatron-import against the outputs of the code that wrote each format (../shared/fixtures/authors)."""
import json
import pathlib

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli

AUTHORS = ROOT.parent / "shared" / "fixtures" / "authors"
SEGATRON_XL = AUTHORS / "segatron_xl"
needs_authors_fixture = pytest.mark.skipif(not SEGATRON_XL.is_dir(), reason="../shared/fixtures/authors is absent")


def in_their_output_order(nll, their_target, cutoffs):
    """Their adaptive softmax writes each band's NLL after the previous band's (time-major flat order within a
    band), not at the token's place: reorder ours (T, B) the same way."""
    band = torch.bucketize(their_target.reshape(-1), torch.tensor(cutoffs), right=True)
    order = torch.cat([(band == k).nonzero()[:, 0] for k in range(len(cutoffs) + 1)])
    return nll.reshape(-1)[order].view_as(nll)


@needs_authors_fixture
def test_authors_segatron_xl_reproduces_their_nll_segment_by_segment(tmp_path):
    from fairseq import checkpoint_utils

    from segatron_fairseq.conversion.importers.vocabulary import map_vocabulary, read_words

    out = run_cli("segatron-import", "authors-segatron-xl", "--state", SEGATRON_XL / "model_state.pt", "--config",
                  SEGATRON_XL / "config.json", "--vocab", SEGATRON_XL / "vocab.txt", "--out", tmp_path / "imported")
    assert "checkpoint.pt" in out
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "imported" / "checkpoint.pt")])
    model = models[0].eval()
    decoder_cfg = model.decoder.cfg
    assert decoder_cfg.segment_distance_origin == "window_end" and not decoder_cfg.per_layer_position_biases
    assert len(task.dictionary) == 303 and task.dictionary[2] == "</s>" and task.dictionary[4] == "w1"
    config = json.loads((SEGATRON_XL / "config.json").read_text())
    index = map_vocabulary(read_words(str(SEGATRON_XL / "vocab.txt")), config["cutoffs"], "vocab").index
    inputs = torch.load(SEGATRON_XL / "inputs.pt", weights_only=False)
    expected = torch.load(SEGATRON_XL / "expected.pt", weights_only=False)["nll"]
    model.reset_memory()
    with torch.no_grad():
        for segment, their_nll in zip(inputs, expected):  # (T, B) each; the memory carries over
            output = model(index[segment["data"].t()], sentence_starts=segment["sentence_starts"].t(),
                           paragraph_starts=segment["paragraph_starts"].t())
            log_probs = model.get_normalized_probs(output, log_probs=True)
            nll = -log_probs.gather(-1, index[segment["target"].t()][..., None])[..., 0].t()
            torch.testing.assert_close(in_their_output_order(nll, segment["target"], config["cutoffs"]),
                                       their_nll, rtol=0, atol=1e-5)


@pytest.mark.end_to_end
@needs_authors_fixture
def test_authors_segatron_xl_checkpoint_runs_with_fairseq_eval_lm(tmp_path):
    run_cli("segatron-import", "authors-segatron-xl", "--state", SEGATRON_XL / "model_state.pt", "--config",
            SEGATRON_XL / "config.json", "--vocab", SEGATRON_XL / "vocab.txt", "--out", tmp_path / "imported")
    words = [w.strip() for w in (SEGATRON_XL / "vocab.txt").read_text().splitlines()][1:]
    text = "\n".join(" ".join(words[i:i + 9]) + " . " + " ".join(words[i + 9:i + 15]) + " ." for i in range(0, 90, 15))
    (tmp_path / "test.txt").write_text(text + "\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "test.txt", "--testpref",
            tmp_path / "test.txt", "--srcdict", tmp_path / "imported" / "dict.txt", "--destdir", tmp_path / "bin")
    out = run_cli("fairseq-eval-lm", tmp_path / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--path",
                  tmp_path / "imported" / "checkpoint.pt", "--gen-subset", "test", "--batch-size", 1, "--tgt-len", 12,
                  "--cpu")
    assert "Evaluated" in out and "Perplexity" in out


@needs_authors_fixture
def test_import_errors_name_the_file(tmp_path):
    config = json.loads((SEGATRON_XL / "config.json").read_text())
    for change, message in ((dict(n_token=301), "has 300 words"),
                            (dict(div_val=4), "div_val 4 (missing word_emb.emb_layers.1.weight"),
                            (dict(attn_type=2), "attn_type = 2 is not supported")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**config, **change}))
        out = run_cli("segatron-import", "authors-segatron-xl", "--state", SEGATRON_XL / "model_state.pt",
                      "--config", path, "--vocab", SEGATRON_XL / "vocab.txt", "--out", tmp_path / "x", expect_ok=False)
        assert "segatron-import: error" in out and message in out, out[-500:]
    words = (SEGATRON_XL / "vocab.txt").read_text().splitlines()
    (tmp_path / "vocab.txt").write_text("\n".join(words[:150] + ["<unk>"] + words[151:]) + "\n")
    out = run_cli("segatron-import", "authors-segatron-xl", "--state", SEGATRON_XL / "model_state.pt", "--config",
                  SEGATRON_XL / "config.json", "--vocab", tmp_path / "vocab.txt", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "vocab.txt: <unk> is word 150, outside the head band" in out
    assert not pathlib.Path(tmp_path / "x" / "checkpoint.pt").exists()


def _their_log_probs(state, hidden, cutoffs, n_token):
    """Their ProjectedAdaptiveLogSoftmax (div_val > 1) for one vector, word by word: (n_token,)."""
    ends = [0] + cutoffs + [n_token]

    def logits(band, extra_weight=None, extra_bias=None):
        weight, bias = state[f"crit.out_layers.{band}.weight"], state[f"crit.out_layers.{band}.bias"]
        if extra_weight is not None:
            weight, bias = torch.cat([weight, extra_weight]), torch.cat([bias, extra_bias])
        projected = hidden @ state[f"crit.out_projs.{band}"]
        return torch.stack([weight[k] @ projected + bias[k] for k in range(weight.size(0))])

    head = torch.log_softmax(logits(0, state["crit.cluster_weight"], state["crit.cluster_bias"]), 0)
    result = []
    for word in range(n_token):
        band = sum(word >= c for c in cutoffs)
        if band == 0:
            result.append(head[word])
        else:  # band i is gated by the head's column -i
            result.append(head[-band] + torch.log_softmax(logits(band), 0)[word - ends[band]])
    return torch.stack(result)


@needs_authors_fixture
def test_authors_adaptive_input_and_softmax_with_div_val_2(tmp_path):
    """A state dict with their key names and div_val 2 (bands of width 48, 24, 12, each with projections), built
    here: the imported embedding and log-probabilities equal their formulas, word by word, to 1e-5."""
    from fairseq import checkpoint_utils

    from segatron_fairseq.conversion.importers.vocabulary import map_vocabulary, read_words

    config = {**json.loads((SEGATRON_XL / "config.json").read_text()), "div_val": 2}
    state = {k: v for k, v in torch.load(SEGATRON_XL / "model_state.pt", weights_only=False).items()
             if not k.startswith(("word_emb.", "crit.out_"))}
    g = torch.Generator().manual_seed(0)
    for band, (start, end) in enumerate(((0, 100), (100, 200), (200, 300))):
        width = 48 // 2 ** band
        state[f"word_emb.emb_layers.{band}.weight"] = torch.randn(end - start, width, generator=g)
        state[f"word_emb.emb_projs.{band}"] = torch.randn(48, width, generator=g) * 0.2
        state[f"crit.out_layers.{band}.weight"] = torch.randn(end - start, width, generator=g) * 0.3
        state[f"crit.out_layers.{band}.bias"] = torch.randn(end - start, generator=g)
        state[f"crit.out_projs.{band}"] = torch.randn(48, width, generator=g) * 0.3
    torch.save(state, tmp_path / "state.pt")
    (tmp_path / "config.json").write_text(json.dumps(config))
    run_cli("segatron-import", "authors-segatron-xl", "--state", tmp_path / "state.pt", "--config",
            tmp_path / "config.json", "--vocab", SEGATRON_XL / "vocab.txt", "--out", tmp_path / "imported")
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "imported" / "checkpoint.pt")])
    decoder = models[0].eval().decoder
    index = map_vocabulary(read_words(str(SEGATRON_XL / "vocab.txt")), config["cutoffs"], "vocab").index
    with torch.no_grad():
        embedded = decoder.embed_tokens(index[None])[0] * decoder.embed_scale  # (300, 48) in their id order
        for word in (0, 57, 150, 299):
            band = sum(word >= c for c in config["cutoffs"])
            row = state[f"word_emb.emb_layers.{band}.weight"][word - [0, 100, 200][band]]
            expected = state[f"word_emb.emb_projs.{band}"] @ row * 48 ** 0.5
            torch.testing.assert_close(embedded[word], expected, rtol=0, atol=1e-5)
        hidden = torch.randn(3, 48, generator=g)
        ours = decoder.adaptive_softmax.get_log_prob(hidden[None], None)[0][:, index]
        for row in range(3):
            torch.testing.assert_close(ours[row], _their_log_probs(state, hidden[row], config["cutoffs"], 300),
                                       rtol=0, atol=1e-5)


SEGABERT = AUTHORS / "segabert"


def _segabert_logits(checkpoint, inputs, vocab):
    """Our MLM logits (B, T, V) in their vocabulary's order, for their inputs; their padded positions get <pad>."""
    from fairseq import checkpoint_utils

    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece, read_wordpiece_vocab

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    index = map_wordpiece(read_wordpiece_vocab(str(vocab)), "vocab").index
    tokens = index[inputs["input_ids"]].masked_fill(inputs["attention_mask"] == 0, task.dictionary.pad())
    indexes = {name: inputs.get(theirs) for name, theirs in (("paragraph_index", "para_pos"),
                                                            ("sentence_index", "sent_pos"),
                                                            ("token_index", "token_pos"))}
    with torch.no_grad():
        logits, _ = models[0].eval()(tokens, token_type=inputs["token_type_ids"], **indexes)
    return logits[..., index], task


@needs_authors_fixture
def test_authors_segabert_reproduces_their_mlm_logits(tmp_path):
    out = run_cli("segatron-import", "authors-segabert", "--model-dir", SEGABERT, "--out", tmp_path / "imported")
    assert "checkpoint.pt" in out
    inputs = torch.load(SEGABERT / "inputs.pt", weights_only=False)
    expected = torch.load(SEGABERT / "expected.pt", weights_only=False)["mlm_logits"]
    ours, task = _segabert_logits(tmp_path / "imported" / "checkpoint.pt", inputs, SEGABERT / "vocab.txt")
    real = inputs["attention_mask"].bool()  # what their padded positions hold is not a token of ours
    assert int((~real).sum()) == 4 and inputs["token_type_ids"].max() == 1 and inputs["para_pos"].max() == 1
    torch.testing.assert_close(ours[real], expected[real], rtol=0, atol=1e-5)
    words = (SEGABERT / "vocab.txt").read_text().split("\n")
    # [CLS] [SEP] [PAD] [UNK] become fairseq's specials, [MASK] the appended <mask>; the words keep their order
    assert task.dictionary.symbols[:6] == ["<s>", "<pad>", "</s>", "<unk>", words[5], words[6]]
    assert task.dictionary[len(task.dictionary) - 1] == "<mask>" and len(task.dictionary) == 123
    model_cfg = torch.load(tmp_path / "imported" / "checkpoint.pt", weights_only=False)["cfg"]["model"]
    assert (model_cfg.max_token_index, model_cfg.max_paragraph_index, model_cfg.max_sentence_index,
            model_cfg.layer_norm_eps, model_cfg.num_token_types) == (32, 8, 16, 1e-12, 2)


@needs_authors_fixture
def test_segabert_import_errors_name_the_file(tmp_path):
    import shutil

    out = run_cli("segatron-import", "hf-bert", "--model-dir", SEGABERT, "--out", tmp_path / "x", expect_ok=False)
    assert "pytorch_model.bin: a SegaBERT state dict: use authors-segabert" in out
    shutil.copytree(SEGABERT, tmp_path / "model")
    words = (SEGABERT / "vocab.txt").read_text().split("\n")
    (tmp_path / "model" / "vocab.txt").write_text("\n".join(w for w in words if w != "[MASK]"))
    out = run_cli("segatron-import", "authors-segabert", "--model-dir", tmp_path / "model", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "vocab.txt: BERT's [MASK] not among the 122 tokens" in out
    (tmp_path / "model" / "vocab.txt").write_text("\n".join(words))
    config = json.loads((SEGABERT / "config.json").read_text())
    (tmp_path / "model" / "config.json").write_text(json.dumps({**config, "hidden_act": "swish"}))
    out = run_cli("segatron-import", "authors-segabert", "--model-dir", tmp_path / "model", "--out", tmp_path / "x",
                  expect_ok=False)
    assert "config.json: hidden_act 'swish'" in out
    assert not (tmp_path / "x" / "checkpoint.pt").exists()
