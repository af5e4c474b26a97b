"""fairseq-train on sharded data, ``s0:s1``: shards binarized differently end the run in one line naming both before a
model is built; Segatron-XL trains 3 epochs over two shards, one an epoch, and a run resumed mid-epoch continues in
that epoch's shard (the log names the shard each split is read from)."""
import re

import pytest
from cli_errors import assert_refused
from conftest import fairseq_train, run_cli, run_cli_refused, write_word_corpus

from segatron_fairseq import PLUGIN_DIR


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """``s0`` (its own dictionary and Punkt model) and ``s1`` (binarized with them) of 4 documents each, and
    ``other``: s1's text with a dictionary of its own."""
    tmp = tmp_path_factory.mktemp("sharded_training")
    for k in (0, 1):
        write_word_corpus(tmp / f"half{k}.txt", [f"w{i}" for i in range(12)], 4, seed=k)
    common = ("--input-format", "lines", "--validpref", tmp / "half0.txt")
    run_cli("segatron-preprocess", *common, "--trainpref", tmp / "half0.txt", "--destdir", tmp / "s0")
    run_cli("segatron-preprocess", *common, "--trainpref", tmp / "half1.txt", "--destdir", tmp / "s1",
            "--srcdict", tmp / "s0" / "dict.txt", "--sentence-splitter", tmp / "s0" / "punkt_tab")
    run_cli("segatron-preprocess", *common, "--trainpref", tmp / "half1.txt", "--destdir", tmp / "other",
            "--sentence-splitter", tmp / "s0" / "punkt_tab")
    return tmp


TRAIN = ["--task", "segatron_lm", "--arch", "segatron_xl_tiny", "--criterion", "segatron_lm_loss", "--optimizer",
         "adam", "--lr", "1e-3", "--cpu", "--batch-size", 2, "--tgt-len", 16]


def test_shards_of_another_dictionary_end_training_in_one_line(shards, tmp_path):
    refusal = run_cli_refused("fairseq-train", f"{shards / 's0'}:{shards / 'other'}", "--user-dir", PLUGIN_DIR,
                              *TRAIN, "--max-update", 1, "--save-dir", tmp_path / "ckpt")
    line = assert_refused(refusal, "fairseq-train", shards / "s0", shards / "other")
    assert "binarized with another dictionary than" in line
    assert "model: " not in refusal.output and not list(tmp_path.glob("ckpt/*.pt"))  # refused before the model


def _shards_read(log):
    """(epoch, shard) of each training split the log says was loaded."""
    return [(int(epoch), int(shard)) for epoch, shard in re.findall(r"train: epoch (\d+) reads shard (\d) of 2", log)]


@pytest.mark.end_to_end
def test_epochs_rotate_over_the_shards_and_a_resumed_run_keeps_its_shard(shards, tmp_path):
    data, ckpt = f"{shards / 's0'}:{shards / 's1'}", tmp_path / "ckpt"
    options = ["--batch-size", 2, "--tgt-len", 16, "--no-epoch-checkpoints", "--disable-validation",
               "--log-format", "simple"]
    first = fairseq_train(data, task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                          save_dir=ckpt, extra=[*options, "--max-epoch", 1])
    per_epoch = int(re.findall(r"num_updates (\d+)", first)[-1])
    assert per_epoch > 4 and _shards_read(first) == [(1, 1), (2, 2)]  # epoch 2's split is loaded as epoch 1 ends
    # stop mid-epoch 2 (a checkpoint every update), then resume from checkpoint_last.pt to the end of epoch 3
    mid = fairseq_train(data, task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                        save_dir=ckpt, extra=[*options, "--max-update", per_epoch + 3, "--save-interval-updates", 1])
    assert _shards_read(mid) == [(2, 2)]
    resumed = fairseq_train(data, task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                            save_dir=ckpt, extra=[*options, "--max-epoch", 3])
    assert f"Loaded checkpoint {ckpt / 'checkpoint_last.pt'} (epoch 2 @ {per_epoch + 3} updates)" in resumed
    assert _shards_read(resumed) == [(2, 2), (3, 1), (4, 2)]
    assert int(re.findall(r"num_updates (\d+)", resumed)[-1]) == 3 * per_epoch
