"""segatron-compare-lm: every input checked before anything runs, and no earlier run deleted without
--overwrite (segatron-compare-mlm shares the checks)."""
import math
import re

import pytest
from conftest import run_cli
from corpus import make_documents, write_wikitext


def fake_data(directory, splits=("train", "valid", "test")):
    """A directory with the files of a segatron-preprocess directory (empty: the checks look for files only)."""
    from segatron_preprocess.corpus_format import dataset_files

    directory.mkdir()
    (directory / "dict.txt").write_text("")
    for split in splits:
        for path in dataset_files(str(directory / split)):
            open(path, "w").close()
    return directory


def refused(command, *args, expect):
    out = run_cli(command, *args, expect_ok=False)
    assert f"{command}: error: {expect}" in out, out[-2000:]
    assert "Traceback" not in out and "training" not in out, out[-3000:]  # refused before anything runs
    return out


@pytest.mark.parametrize("option,value,expect", [
    ("--max-update", 0, "argument --max-update: must be at least 1, not 0"),
    ("--layers", -1, "argument --layers: must be at least 1, not -1"),
    ("--tgt-len", 0, "argument --tgt-len: must be at least 1, not 0"),
    ("--batch-size", 0, "argument --batch-size: must be at least 1, not 0"),
    ("--eval-batch-size", 0, "argument --eval-batch-size: must be at least 1, not 0"),
    ("--mem-len", -1, "--mem-len: must be at least 0, not -1"),
    ("--warmup", -5, "--warmup: must be at least 0, not -5"),
    ("--validate-every", -1, "--validate-every: must be at least 0, not -1"),
    ("--dropout", 1.5, "--dropout: must be in [0, 1), not 1.5"),
    ("--lr", 0, "--lr: must be above 0, not 0.0"),
    ("--heads", 3, "--dim 128 is not a multiple of --heads 3"),
])
def test_compare_lm_numbers_are_checked_by_the_parser(tmp_path, option, value, expect):
    data = fake_data(tmp_path / "bin")
    refused("segatron-compare-lm", "--data", data, "--workdir", tmp_path / "runs", option, value, expect=expect)
    assert not (tmp_path / "runs").exists()


def test_compare_lm_data_and_folders_are_checked_first(tmp_path):
    runs = tmp_path / "runs"
    refused("segatron-compare-lm", "--data", tmp_path / "nope", "--workdir", runs,
            expect=f"--data {tmp_path / 'nope'}: not a directory")
    data = fake_data(tmp_path / "bin", splits=("train", "valid"))
    refused("segatron-compare-lm", "--data", data, "--workdir", runs,
            expect=f"--data {data}: not a segatron-preprocess directory with train, valid, test (no {data}/test.bin)")
    data = fake_data(tmp_path / "full")
    (runs / "no_sentence").mkdir(parents=True)
    (runs / "no_sentence" / "checkpoint_last.pt").write_text("an earlier run\n")
    (runs / "segatron_xl").mkdir()  # an empty folder is used as it is
    refused("segatron-compare-lm", "--data", data, "--workdir", runs,
            expect=f"--workdir {runs}: {runs / 'no_sentence'} holds an earlier run; pass --overwrite to replace it")
    assert (runs / "no_sentence" / "checkpoint_last.pt").read_text() == "an earlier run\n"
    refused("segatron-compare-lm", "--data", data, "--workdir", data / "dict.txt",
            expect=f"--workdir {data / 'dict.txt'}: a file, not a directory")
    refused("segatron-compare-lm", "--data", data, "--workdir", runs, "--variants", "segatron_xl", "--out", tmp_path,
            expect=f"{tmp_path}: --out is a directory")


def test_compare_lm_keeps_an_existing_out_and_its_inputs(tmp_path):
    data = fake_data(tmp_path / "bin")
    runs, results = tmp_path / "runs", tmp_path / "results.json"
    results.write_text("[]\n")
    refused("segatron-compare-lm", "--data", data, "--workdir", runs, "--out", results,
            expect=f"{results}: --out exists; pass --overwrite to replace it")
    # the run's own input, even with --overwrite (the review turned wt4/dict.txt into JSON)
    refused("segatron-compare-lm", "--data", data, "--workdir", runs, "--out", data / "dict.txt", "--overwrite",
            expect=f"{data / 'dict.txt'}: --out is the same file as --data's dict.txt")
    refused("segatron-compare-mlm", "--data", data, "--workdir", runs, "--out", results,
            expect=f"{results}: --out exists")
    assert results.read_text() == "[]\n" and (data / "dict.txt").read_text() == "" and not runs.exists()


def test_compare_mlm_checks_the_same(tmp_path):
    data = fake_data(tmp_path / "bin", splits=("train", "valid"))
    runs = tmp_path / "runs"
    refused("segatron-compare-mlm", "--data", data, "--workdir", runs, "--eval-every", 0,
            expect="argument --eval-every: must be at least 1, not 0")
    refused("segatron-compare-mlm", "--data", data, "--workdir", runs, "--max-update", 10, "--eval-every", 3,
            expect="--eval-every 3 does not divide --max-update 10")
    refused("segatron-compare-mlm", "--data", tmp_path / "nope", "--workdir", runs,
            expect=f"--data {tmp_path / 'nope'}: not a directory")
    (runs / "mlm" / "bert").mkdir(parents=True)
    (runs / "mlm" / "bert" / "train.log").write_text("an earlier run\n")
    refused("segatron-compare-mlm", "--data", data, "--workdir", runs,
            expect=f"--workdir {runs}: {runs / 'mlm' / 'bert'} holds an earlier run")
    assert (runs / "mlm" / "bert" / "train.log").read_text() == "an earlier run\n"


@pytest.mark.parametrize("command", ["segatron-compare-lm", "segatron-compare-mlm"])
def test_overwrite_never_deletes_what_no_run_wrote(tmp_path, command):
    """--overwrite replaces a variant folder's checkpoints and logs; a folder holding anything else is refused
    whole, with nothing deleted."""
    data = fake_data(tmp_path / "bin")
    folder = tmp_path / "runs" / ("no_sentence" if command == "segatron-compare-lm" else "mlm/bert")
    (folder / "notes").mkdir(parents=True)
    (folder / "checkpoint_last.pt").write_text("an earlier run\n")
    (folder / "analysis.ipynb").write_text("mine\n")
    runs = tmp_path / "runs"
    refused(command, "--data", data, "--workdir", runs, "--overwrite",
            expect=f"--workdir {runs}: {folder / 'analysis.ipynb'} was not written by a run")
    (folder / "analysis.ipynb").unlink()
    refused(command, "--data", data, "--workdir", runs, "--overwrite",
            expect=f"--workdir {runs}: {folder / 'notes'} was not written by a run")
    assert (folder / "checkpoint_last.pt").read_text() == "an earlier run\n" and (folder / "notes").is_dir()


def test_fresh_folder_removes_an_earlier_runs_files_alone(tmp_path):
    from segatron_fairseq.cli.compare_lm import fresh_folder

    (tmp_path / "run").mkdir()
    for name in ("checkpoint_last.pt", "checkpoint_1_2.pt", "train.log", "eval_valid.log"):
        (tmp_path / "run" / name).write_text("x")
    fresh_folder(str(tmp_path / "run"))
    fresh_folder(str(tmp_path / "new"))
    assert list((tmp_path / "run").iterdir()) == [] and (tmp_path / "new").is_dir()


@pytest.mark.end_to_end  # segatron-compare-lm runs fairseq-train and fairseq-eval-lm in subprocesses
def test_compare_lm_with_overwrite_replaces_an_earlier_run(tmp_path):
    """An earlier run replaced; the valid curve in train.log (--validate-every); results.json with the test split by
    kind of target token, whose mean loss is fairseq-eval-lm's test perplexity."""
    from segatron_fairseq.cli.lm_results import read_results
    from segatron_fairseq.cli.plot import read_curves

    write_wikitext(tmp_path / "train.txt", make_documents(20, seed=3))
    write_wikitext(tmp_path / "valid.txt", make_documents(3, seed=4))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "train.txt",
            "--validpref", tmp_path / "valid.txt", "--testpref", tmp_path / "valid.txt", "--destdir", tmp_path / "bin")
    runs = tmp_path / "runs"
    (runs / "transformer_xl").mkdir(parents=True)
    (runs / "transformer_xl" / "checkpoint_1_500.pt").write_text("an earlier run\n")
    out = run_cli("segatron-compare-lm", "--data", tmp_path / "bin", "--workdir", runs, "--variants",
                  "transformer_xl", "--overwrite", "--max-update", 2, "--layers", 1, "--dim", 16, "--heads", 2,
                  "--ffn", 32, "--tgt-len", 8, "--mem-len", 8, "--batch-size", 2, "--warmup", 1,
                  "--validate-every", 1, "--out", tmp_path / "results.json")
    assert re.search(r"^transformer_xl\s+[0-9,]+\s+[0-9.]+\s+[0-9.]+", out, re.M), out[-2000:]
    assert not (runs / "transformer_xl" / "checkpoint_1_500.pt").exists()
    assert (runs / "transformer_xl" / "checkpoint_last.pt").exists()
    assert [updates for updates, _ in read_curves(str(runs / "transformer_xl" / "train.log"))["valid"]] == [1, 2]
    (record,) = read_results(str(tmp_path / "results.json"))
    kinds = record["test_by_kind"]
    assert min(kind["tokens"] for kind in kinds.values()) > 0
    mean_loss = sum(kind["tokens"] * kind["loss"] for kind in kinds.values()) / sum(k["tokens"] for k in kinds.values())
    assert math.exp(mean_loss) == pytest.approx(record["test"], abs=0.006)  # fairseq-eval-lm prints 2 decimals
