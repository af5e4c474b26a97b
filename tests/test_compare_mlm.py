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
