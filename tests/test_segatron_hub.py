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
