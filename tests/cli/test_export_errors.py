"""segatron-export hf: each user mistake is one line naming the file or option, a non-zero exit, no traceback and
no output directory; the files it writes get an ordinary file's mode."""
import os

import pytest
from cli_errors import assert_user_error, listing, write_bad_checkpoints
from conftest import run_cli


@pytest.fixture(scope="module")
def files(segabert_corpus, segabert_checkpoint, segatron_xl_trained, cloze_trained, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export_errors")
    return {"checkpoint": segabert_checkpoint, "corpus": segabert_corpus, "missing": tmp / "missing.pt",
            "cloze": cloze_trained / "ckpt" / "checkpoint_last.pt",
            "xl_corpus": segatron_xl_trained / "bin",
            **write_bad_checkpoints(tmp, segabert_checkpoint)}


CASES = {  # name: (options replaced, what the error names)
    "missing checkpoint": ({"--checkpoint": "{missing}"}, "{missing}"),
    "empty checkpoint": ({"--checkpoint": "{empty}"}, "{empty}"),
    "truncated checkpoint": ({"--checkpoint": "{truncated}"}, "{truncated}"),
    "cloze two-tower checkpoint": ({"--checkpoint": "{cloze}"},
                                   "{cloze}: a cloze_two_tower checkpoint, which has no Hugging Face export"),
    "dictionary does not fit": ({"--data": "{xl_corpus}"}, "--data"),
    "data missing": ({"--data": "{missing}"}, "{missing}"),
}


@pytest.mark.parametrize("case", CASES)
def test_export_refuses_and_writes_nothing(case, files, tmp_path):
    replaced, named = CASES[case]
    options = {"--checkpoint": "{checkpoint}", "--data": "{corpus}", "--out": str(tmp_path / "hf"), **replaced}
    args = [part.format(**files) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-export", "hf", *args, expect_ok=False)
    assert_user_error(out, "segatron-export", named.format(**files))
    assert listing(tmp_path) == {}


def test_every_exported_file_has_an_ordinary_files_mode(files, tmp_path):
    """0666 less the umask, model.safetensors included (safetensors' save_file writes 0600)."""
    umask = os.umask(0o027)
    try:
        run_cli("segatron-export", "hf", "--checkpoint", files["checkpoint"], "--data", files["corpus"], "--out",
                tmp_path / "hf")
    finally:
        os.umask(umask)
    modes = {path.name: path.stat().st_mode & 0o777 for path in (tmp_path / "hf").iterdir()}
    assert "model.safetensors" in modes and "config.json" in modes
    assert modes == dict.fromkeys(modes, 0o640)
