"""Scoring raw text with a trained Segatron-XL: the same tokens and losses as fairseq-eval-lm on that text
binarized, and independent calls."""
import math
import re
import shutil

import numpy as np
import pytest
import torch

from conftest import PLUGIN_DIR, binarized_wikitext, run_cli
from corpus import make_documents, write_wikitext


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = binarized_wikitext(tmp_path_factory.mktemp("hub"), 30, 4, seed=41)
    log = run_cli("fairseq-train", tmp / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--arch",
                  "segatron_xl_tiny", "--criterion", "segatron_lm_loss", "--optimizer", "adam", "--lr", "2e-3",
                  "--batch-size", 4, "--tgt-len", 16, "--max-update", 30, "--cpu", "--save-dir", tmp / "ckpt",
                  "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", 5,
                  "--validate-interval-updates", 10)
    (tmp / "train.log").write_text(log)
    write_wikitext(tmp / "score.txt", make_documents(3, seed=99))
    write_wikitext(tmp / "other.txt", make_documents(2, seed=98))
    return tmp


def test_score_equals_fairseq_eval_lm_on_the_binarized_text(trained, tmp_path):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel
    from segatron_fairseq.token_losses import read_stream, token_losses

    reference = tmp_path / "bin"
    shutil.copytree(trained / "bin", reference)  # its dictionary and Punkt model, for the new split
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--testpref", trained / "score.txt",
            "--destdir", reference)
    checkpoint = trained / "ckpt" / "checkpoint_last.pt"
    out = run_cli("fairseq-eval-lm", reference, "--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--path",
                  checkpoint, "--gen-subset", "test", "--batch-size", 1, "--tgt-len", 16, "--cpu")
    match = re.search(r"Evaluated ([\d,]+) tokens.*\n.*Loss \(base 2\): ([0-9.]+)", out)
    evaluated, loss_bits = int(match.group(1).replace(",", "")), float(match.group(2))

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    result = lm.score((trained / "score.txt").read_text())
    assert len(result["tokens"]) == evaluated
    assert abs(result["loss"] / math.log(2) - loss_bits) < 1e-3
    assert result["ppl"] == pytest.approx(math.exp(result["loss"]))
    tokens, sentence_starts, paragraph_starts = read_stream(str(reference / "test"))
    assert np.array_equal(result["tokens"].numpy(), tokens)
    expected = token_losses(str(checkpoint), tokens, sentence_starts, paragraph_starts, 16)
    np.testing.assert_allclose(-result["positional_scores"].numpy(), expected, rtol=0, atol=1e-5)


def test_calls_are_independent(trained):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    text = (trained / "score.txt").read_text()
    first = lm.score(text)["positional_scores"]
    lm.score((trained / "other.txt").read_text())
    again = lm.score(text)["positional_scores"]
    assert np.array_equal(first.numpy(), again.numpy())  # the other text's memory did not leak in


def _check_image(prefix, width, height):
    from matplotlib import image

    pixels = image.imread(f"{prefix}.png")
    assert pixels.shape[:2] == (height, width)
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 20  # not blank
    assert "<svg" in open(f"{prefix}.svg").read(2000)


def test_attention_weights_and_plot(trained, tmp_path):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    result = lm.attention((trained / "score.txt").read_text(), max_tokens=24)
    assert len(result["layers"]) == 2 and result["layers"][0].shape == (4, 24, 24)
    assert torch.allclose(result["layers"][0].sum(-1), torch.ones(4, 24))
    assert torch.all(result["layers"][0].triu(diagonal=1) == 0)  # causal, no memory
    assert result["symbols"][0] == "</s>" and result["paragraph_starts"][0]
    run_cli("segatron-plot", "attention", "--model-dir", trained / "ckpt", "--checkpoint-file", "checkpoint_last.pt",
            "--data", trained / "bin", "--text", trained / "score.txt", "--layer", 1, "--max-tokens", 24,
            "--out", tmp_path / "attention")
    _check_image(tmp_path / "attention", 1600, 400)  # 4 heads of 4 x 4 inches at 100 dpi


def test_curves_and_boundary_plots(trained, tmp_path):
    from segatron_fairseq.cli.plot import losses_by_sentence_position, read_curves

    curves = read_curves(str(trained / "train.log"))
    assert [u for u, _ in curves["train"]] == [5, 10, 15, 20, 25, 30] and [u for u, _ in curves["valid"]][:3] == \
        [10, 20, 30]
    run_cli("segatron-plot", "curves", trained / "train.log", trained / "train.log", "--labels", "a,b", "--out",
            tmp_path / "curves")
    _check_image(tmp_path / "curves", 800, 500)
    assert np.allclose(losses_by_sentence_position(np.array([1.0, 3.0, 2.0, 4.0]), np.array([0, 0, 1, 5]), 2),
                       [2.0, 2.0, 4.0])
    run_cli("segatron-plot", "boundary", trained / "ckpt" / "checkpoint_last.pt", "--data", trained / "bin",
            "--split", "valid", "--tgt-len", 16, "--out", tmp_path / "boundary")
    _check_image(tmp_path / "boundary", 800, 500)


def test_generation_flags_follow_the_binarizer(trained):
    """Tokens pushed one at a time get the sentence / paragraph starts the binarizer gave them in whole
    paragraphs (the generated text's flags follow the training data's rules)."""
    from segatron_preprocess.text_encoder import GenerationIndexer, TextEncoder
    from segatron_fairseq.token_losses import read_stream

    tokens, sentence_starts, paragraph_starts = read_stream(str(trained / "bin" / "valid"))
    encoder = TextEncoder(str(trained / "bin"))
    indexer = GenerationIndexer(encoder)
    pushed = np.array([indexer.push(int(t)) for t in tokens])
    words = tokens != encoder.dictionary.eos()
    assert sentence_starts[words].sum() > 50
    assert np.array_equal(pushed[words, 0], sentence_starts[words])
    assert np.array_equal(pushed[words, 1], paragraph_starts[words])


def test_sampling_incremental_equals_recomputing_and_is_reproducible(trained):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    prompt = "The lobster lives on rocky ground . The larva"
    # the window (memory 32 + segment 16 = 48 positions) is not capped within 12 + 30 tokens: the same tokens
    greedy = lm.sample_tokens(prompt, max_len=30, topk=1)
    assert greedy == lm.sample_tokens(prompt, max_len=30, topk=1, incremental=False)
    # the first greedy token is the argmax of the model's own next-token logits after the prompt
    encoded = lm.encode(prompt)
    eos = lm.task.dictionary.eos()
    source = torch.tensor([[eos] + encoded.tokens[:-1].tolist()])
    flags = [np.concatenate([[True], f[:-1]]) for f in (encoded.sentence_starts, encoded.paragraph_starts)]
    lm.model.reset_memory()
    with torch.no_grad():
        logits, _ = lm.model(source, sentence_starts=torch.tensor(flags[0])[None],
                             paragraph_starts=torch.tensor(flags[1])[None])
    lm.model.reset_memory()
    excluded = [lm.task.dictionary.pad(), lm.task.dictionary.bos()]
    logits[0, -1, excluded] = float("-inf")
    assert greedy[0] == int(logits[0, -1].argmax())
    first = lm.sample(prompt, max_len=40, topk=5, temperature=0.8, seed=7)
    lm.score((trained / "other.txt").read_text())  # another call in between
    assert lm.sample(prompt, max_len=40, topk=5, temperature=0.8, seed=7) == first
    assert lm.sample(prompt, max_len=40, topp=0.9, seed=8) != first
    words = set(lm.task.dictionary.symbols)
    assert all(w in words for line in first.splitlines() for w in line.split())
    long = lm.sample_tokens(prompt, max_len=120, topk=3, seed=1)  # past the window: the cache is capped
    assert len(long) == 120
