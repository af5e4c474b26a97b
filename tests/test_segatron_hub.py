"""Scoring raw text with a trained Segatron-XL: the same tokens and losses as fairseq-eval-lm on that text
binarized, and independent calls."""
import math
import re
import shutil

import numpy as np
import pytest

from conftest import PLUGIN_DIR, binarized_wikitext, run_cli
from corpus import make_documents, write_wikitext


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = binarized_wikitext(tmp_path_factory.mktemp("hub"), 30, 4, seed=41)
    run_cli("fairseq-train", tmp / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--arch",
            "segatron_xl_tiny", "--criterion", "segatron_lm_loss", "--optimizer", "adam", "--lr", "2e-3",
            "--batch-size", 4, "--tgt-len", 16, "--max-update", 30, "--cpu", "--save-dir", tmp / "ckpt",
            "--no-epoch-checkpoints", "--log-format", "simple")
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
