"""segatron-plot attention and curves: each user mistake is one line naming the file or option, a non-zero exit,
no traceback and nothing written (boundary: test_loss_by_boundary_errors.py)."""
import shutil

import pytest
from cli_errors import assert_user_error, listing, write_bad_checkpoints
from conftest import run_cli


@pytest.fixture(scope="module")
def files(segatron_xl_trained, segabert_checkpoint, segabert_corpus, tmp_path_factory):
    """Model directories (good, empty, truncated, SegaBERT), texts (good, empty, non-UTF-8) and logs."""
    tmp = tmp_path_factory.mktemp("plot_errors")
    checkpoint = segatron_xl_trained / "ckpt" / "checkpoint_last.pt"
    bad = write_bad_checkpoints(tmp / "bad", checkpoint)
    for name, source in (("empty", bad["empty"]), ("truncated", bad["truncated"]), ("segabert", segabert_checkpoint)):
        (tmp / name).mkdir()
        shutil.copyfile(source, tmp / name / "checkpoint_last.pt")
    (tmp / "empty.txt").write_text(" \n\n")
    (tmp / "latin1.txt").write_bytes("Caf\u00e9 au lait .\n".encode("latin-1"))
    (tmp / "not_a_log.txt").write_text("nothing fairseq-train wrote\n")
    return {"model": segatron_xl_trained / "ckpt", "data": segatron_xl_trained / "bin",
            "text": segatron_xl_trained / "score.txt", "log": segatron_xl_trained / "train.log",
            "other_corpus": segabert_corpus, "tmp": tmp, "missing": tmp / "missing"}


ATTENTION = {  # name: (options replaced, what the error names)
    "model directory missing": ({"--model-dir": "{missing}"}, "{missing}"),
    "empty checkpoint": ({"--model-dir": "{tmp}/empty"}, "{tmp}/empty/checkpoint_last.pt"),
    "truncated checkpoint": ({"--model-dir": "{tmp}/truncated"}, "{tmp}/truncated/checkpoint_last.pt"),
    "SegaBERT checkpoint": ({"--model-dir": "{tmp}/segabert"}, "{tmp}/segabert/checkpoint_last.pt"),
    "dictionary does not fit": ({"--data": "{other_corpus}"}, "--data"),
    "text missing": ({"--text": "{missing}"}, "{missing}"),
    "text empty": ({"--text": "{tmp}/empty.txt"}, "{tmp}/empty.txt"),
    "text not UTF-8": ({"--text": "{tmp}/latin1.txt"}, "{tmp}/latin1.txt"),
    "text is a directory": ({"--text": "{tmp}"}, "{tmp}"),
    "max-tokens 0": ({"--max-tokens": "0"}, "--max-tokens"),
    "layer negative": ({"--layer": "-1"}, "--layer"),
    "layer past the last": ({"--layer": "9"}, "--layer"),
}


@pytest.mark.parametrize("case", ATTENTION)
def test_attention_refuses_and_writes_nothing(case, files, tmp_path):
    replaced, named = ATTENTION[case]
    options = {"--model-dir": "{model}", "--checkpoint-file": "checkpoint_last.pt", "--data": "{data}",
               "--text": "{text}", "--out": str(tmp_path / "attn"), **replaced}
    args = [part.format(**files) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-plot", "attention", *args, expect_ok=False)
    assert_user_error(out, "segatron-plot", named.format(**files))
    assert listing(tmp_path) == {}


def test_attention_with_relative_paths_from_another_directory(files, tmp_path):
    shutil.copytree(files["model"], tmp_path / "model")
    shutil.copytree(files["data"], tmp_path / "corpus")
    shutil.copyfile(files["text"], tmp_path / "text.txt")
    (tmp_path / "elsewhere").mkdir()
    run_cli("segatron-plot", "attention", "--model-dir", "../model", "--checkpoint-file", "checkpoint_last.pt",
            "--data", "../corpus", "--text", "../text.txt", "--out", "attn", cwd=tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / "attn.png").is_file()


@pytest.mark.parametrize("case, log", [("missing", "{missing}"), ("directory", "{tmp}"),
                                       ("not a fairseq-train log", "{tmp}/not_a_log.txt")])
def test_curves_refuses_and_writes_nothing(case, log, files, tmp_path):
    out = run_cli("segatron-plot", "curves", files["log"], log.format(**files), "--out", tmp_path / "curves",
                  expect_ok=False)
    assert_user_error(out, "segatron-plot", log.format(**files))
    assert listing(tmp_path) == {}
