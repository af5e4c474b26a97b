"""segatron-sts: each user mistake is one line naming the file or option, a non-zero exit, no traceback."""
import pytest
from cli_errors import assert_user_error, write_bad_checkpoints
from conftest import run_cli


@pytest.fixture(scope="module")
def files(segabert_corpus, segabert_checkpoint, segatron_xl_trained, cross_thought_trained, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sts_errors")
    (tmp / "sts.tsv").write_text("w1 w2\tw3 w4\t1.0\nw5 w6\tw7 w8\t3.5\nkey w1\tkey w2\t2.0\n")
    (tmp / "latin1.tsv").write_bytes("caf\u00e9\tlait\t1.0\n".encode("latin-1"))
    return {"checkpoint": segabert_checkpoint, "corpus": segabert_corpus, "sts": tmp / "sts.tsv",
            "segatron_xl": segatron_xl_trained / "ckpt" / "checkpoint_last.pt",
            "xl_corpus": segatron_xl_trained / "bin",
            "cross_thought": cross_thought_trained / "ckpt" / "checkpoint_last.pt", "missing": tmp / "missing",
            "latin1": tmp / "latin1.tsv", **write_bad_checkpoints(tmp, segabert_checkpoint)}


CASES = {  # name: (options replaced, STS file, what the error names)
    "Segatron-XL checkpoint": ({"--checkpoint": "{segatron_xl}", "--data": "{xl_corpus}"}, "{sts}",
                               "{segatron_xl}: this is a segatron_xl checkpoint"),
    "Cross-Thought checkpoint": ({"--checkpoint": "{cross_thought}"}, "{sts}", "{cross_thought}"),
    "missing checkpoint": ({"--checkpoint": "{missing}"}, "{sts}", "{missing}"),
    "empty checkpoint": ({"--checkpoint": "{empty}"}, "{sts}", "{empty}"),
    "truncated checkpoint": ({"--checkpoint": "{truncated}"}, "{sts}", "{truncated}"),
    "dictionary does not fit": ({"--data": "{xl_corpus}"}, "{sts}", "--data"),
    "STS file missing": ({}, "{missing}", "{missing}"),
    "STS file not UTF-8": ({}, "{latin1}", "{latin1}"),
}


@pytest.mark.parametrize("case", CASES)
def test_sts_refuses(case, files):
    replaced, sts, named = CASES[case]
    options = {"--checkpoint": "{checkpoint}", "--data": "{corpus}", **replaced}
    args = [part.format(**files) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-sts", *args, sts.format(**files), "--cpu", expect_ok=False)
    assert_user_error(out, "segatron-sts", named.format(**files))
