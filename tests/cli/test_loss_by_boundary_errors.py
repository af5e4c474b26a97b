"""segatron-loss-by-boundary and segatron-plot boundary: the dictionary is --data's (not the corpus path saved in
the checkpoint), and each user mistake is one line naming the file or option, a non-zero exit, no traceback and
nothing written."""
import math
import shutil

import pytest
import torch
from cli_errors import assert_user_error, listing, write_bad_checkpoints
from conftest import run_cli


@pytest.fixture(scope="module")
def files(segatron_xl_trained, segabert_checkpoint, segabert_corpus, tmp_path_factory):
    """The trained Segatron-XL and its corpus, bad checkpoints, a SegaBERT checkpoint and another corpus."""
    tmp = tmp_path_factory.mktemp("boundary_errors")
    checkpoint = segatron_xl_trained / "ckpt" / "checkpoint_last.pt"
    return {"checkpoint": checkpoint, "data": segatron_xl_trained / "bin", "segabert": segabert_checkpoint,
            "other_corpus": segabert_corpus, "missing": tmp / "missing.pt", "directory": tmp,
            **write_bad_checkpoints(tmp / "bad", checkpoint)}


CASES = {  # name: (arguments with {file} fields, what the error names)
    "missing checkpoint": (["{missing}", "--data", "{data}"], "{missing}"),
    "checkpoint is a directory": (["{directory}", "--data", "{data}"], "{directory}"),
    "empty checkpoint": (["{empty}", "--data", "{data}"], "{empty}"),
    "truncated checkpoint": (["{truncated}", "--data", "{data}"], "{truncated}"),
    "SegaBERT checkpoint": (["{segabert}", "--data", "{data}"], "{segabert}"),
    "second checkpoint missing": (["{checkpoint}", "{missing}", "--data", "{data}"], "{missing}"),
    "data missing": (["{checkpoint}", "--data", "{missing}"], "{missing}"),
    "dictionary does not fit": (["{checkpoint}", "--data", "{other_corpus}"], "--data"),
    "tgt-len 0": (["{checkpoint}", "--data", "{data}", "--tgt-len", "0"], "--tgt-len"),
    "tgt-len negative": (["{checkpoint}", "--data", "{data}", "--tgt-len", "-3"], "--tgt-len"),
}


def _fill(items, files):
    return [item.format(**files) for item in items]


@pytest.mark.parametrize("case", CASES)
def test_loss_by_boundary_refuses(case, files):
    args, named = CASES[case]
    out = run_cli("segatron-loss-by-boundary", *_fill(args, files), "--split", "valid", expect_ok=False)
    assert_user_error(out, "segatron-loss-by-boundary", named.format(**files))


@pytest.mark.parametrize("case", [*CASES, "longest 0"])
def test_plot_boundary_refuses_and_writes_nothing(case, files, tmp_path):
    args, named = CASES[case] if case in CASES else (["{checkpoint}", "--data", "{data}", "--longest", "0"],
                                                     "--longest")
    out = run_cli("segatron-plot", "boundary", *_fill(args, files), "--split", "valid", "--out", tmp_path / "fig",
                  expect_ok=False)
    assert_user_error(out, "segatron-plot", named.format(**files))
    assert listing(tmp_path) == {}


def test_the_dictionary_is_read_from_data_not_the_saved_path(files, tmp_path):
    """A checkpoint whose saved corpus is a relative path that does not exist where the tool runs (trained in
    another directory): both tools read --data (relative too) and score as with the original checkpoint."""
    state = torch.load(files["checkpoint"], map_location="cpu", weights_only=False)
    state["cfg"]["task"]["data"] = "data-bin"
    (tmp_path / "run").mkdir()
    torch.save(state, tmp_path / "run" / "moved.pt")
    shutil.copytree(files["data"], tmp_path / "run" / "corpus")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    expected = run_cli("segatron-loss-by-boundary", files["checkpoint"], "--data", files["data"], "--split", "valid",
                       "--tgt-len", 16).strip().splitlines()[-1].split()[1:]
    out = run_cli("segatron-loss-by-boundary", "../run/moved.pt", "--data", "../run/corpus", "--split", "valid",
                  "--tgt-len", 16, cwd=elsewhere)
    assert out.strip().splitlines()[-1].split()[1:] == expected
    assert all(math.isfinite(float(ppl)) for ppl in expected)
    run_cli("segatron-plot", "boundary", "../run/moved.pt", "--data", "../run/corpus", "--split", "valid",
            "--tgt-len", 16, "--out", "fig", cwd=elsewhere)
    assert (elsewhere / "fig.png").is_file()
