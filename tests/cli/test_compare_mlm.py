"""segatron-compare-mlm: each objective's SegaBERT and BERT with equal parameters, scored at each checkpoint."""
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
    assert [(r["objective"], r["model"], r["measure"]) for r in results] == [("mlm", "segabert", "ppl"),
                                                                              ("mlm", "bert", "ppl")]
    assert results[0]["params"] == results[1]["params"]  # 406 index rows against 406 position rows
    state_files = sorted(p.name for p in (tmp_path / "runs" / "mlm" / "bert").glob("checkpoint_*_*.pt"))
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


def test_validation_scores_read_fairseq_validates_summary():
    from segatron_fairseq.cli.compare_mlm import validation_scores

    log = ("2026-11-24 | INFO | valid | valid on 'valid' subset | loss 5.123 | mlm_loss 5.1 | mlm_ppl 34.5 | "
           "rtd_auc 0.75 | ppl 34.84 | wps 1234 | wpb 512 | bsz 4 | num_updates 2\n")
    scores = validation_scores(log)
    assert scores["ppl"] == 34.84 and scores["mlm_ppl"] == 34.5 and scores["rtd_auc"] == 0.75
    assert validation_scores("no summary") == {}


def test_objectives_option_names_the_known_objectives(capsys):
    from segatron_fairseq.cli.compare_mlm import cli_main
    from segatron_fairseq.cli.encoder_objectives import OBJECTIVES

    assert "mlm" in OBJECTIVES
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--data", "d", "--objectives", "mlm,no_such"])
    assert exit_info.value.code == 2
    assert "--objectives: no_such: not an objective (choose from mlm" in capsys.readouterr().err


def test_trained_parameters_count_each_tensor_once_without_fast_path_copies(tmp_path):
    """ELECTRA's generator holds the discriminator's tables (the same tensors after torch.load); fairseq's layers
    hold zero copies of their weights for BetterTransformer."""
    import torch

    from segatron_fairseq.cli.compare_mlm import trained_parameters

    table = torch.randn(10, 4)
    state = {"encoder.sentence_encoder.embed_tokens.weight": table,
             "generator.sentence_encoder.embed_tokens.weight": table,
             "encoder.sentence_encoder.layers.0.fc1.weight": torch.randn(8, 4),
             "encoder.sentence_encoder.layers.0.fc1_weight": torch.zeros(8, 4),
             "encoder.sentence_encoder.layers.0.in_proj_weight": torch.zeros(12, 4),
             "encoder.lm_head.bias": torch.zeros(10)}
    assert trained_parameters(state) == 40 + 32 + 10
    torch.save({"model": state}, tmp_path / "checkpoint.pt")  # a checkpoint keeps the sharing
    assert trained_parameters(torch.load(tmp_path / "checkpoint.pt")["model"]) == 40 + 32 + 10
