"""segatron-compare-mlm: SegaBERT and BERT with equal parameters, scored at each checkpoint."""
import json
import re

import pytest
from conftest import run_cli
from corpus import make_documents, write_wikitext


@pytest.mark.end_to_end  # segatron-compare-mlm runs fairseq-train and fairseq-validate in subprocesses
def test_compare_mlm_scores_both_models_with_equal_parameters(tmp_path):
    write_wikitext(tmp_path / "train.txt", make_documents(30, seed=1))
    write_wikitext(tmp_path / "valid.txt", make_documents(5, seed=2))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "train.txt",
            "--validpref", tmp_path / "valid.txt", "--destdir", tmp_path / "bin")
    out = run_cli("segatron-compare-mlm", "--data", tmp_path / "bin", "--workdir", tmp_path / "runs",
                  "--max-update", 4, "--eval-every", 2, "--layers", 1, "--dim", 16, "--heads", 2, "--ffn", 32,
                  "--tokens-per-sample", 64, "--batch-size", 4, "--out", tmp_path / "results.json")
    rows = re.findall(r"^\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$", out, re.M)
    assert [int(r[0]) for r in rows] == [2, 4]
    for _, segabert, bert, ratio in rows:
        assert abs(float(segabert) / float(bert) - float(ratio)) < 2e-3
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["model"] for r in results] == ["segabert", "bert"]
    assert results[0]["params"] == results[1]["params"]  # 406 index rows against 406 position rows
    state_files = sorted(p.name for p in (tmp_path / "runs" / "bert").glob("checkpoint_*_*.pt"))
    assert state_files == ["checkpoint_1_2.pt"]  # and checkpoint_last.pt after 4 updates: one epoch of 4 batches


def test_scores_read_the_checkpoint_of_each_interval(tmp_path):
    """One epoch of max_update batches: the interval checkpoints, then checkpoint_last.pt; a checkpoint holding
    another update count is refused by name."""
    import torch

    from segatron_fairseq.cli.compare_mlm import checkpoint_at

    for name, updates in (("checkpoint_1_2.pt", 2), ("checkpoint_1_4.pt", 3), ("checkpoint_last.pt", 6)):
        torch.save({"optimizer_history": [{"num_updates": updates}]}, tmp_path / name)
    assert checkpoint_at(str(tmp_path), 2, 6) == str(tmp_path / "checkpoint_1_2.pt")
    assert checkpoint_at(str(tmp_path), 6, 6) == str(tmp_path / "checkpoint_last.pt")
    with pytest.raises(SystemExit, match=r"checkpoint_1_4\.pt holds the model after 3 updates, not 4"):
        checkpoint_at(str(tmp_path), 4, 6)
