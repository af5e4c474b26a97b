"""Where a line ends: text is read in fairseq-preprocess's lines (Python's universal newlines: \\n, \\r\\n or a lone
\\r), in the binarizer, its job boundaries, its line numbers and the raw text of ``units.read_text_units``; the other
line breaks of ``str.splitlines`` are white space inside a line. JSON lines end at \\n only."""
import os

import pytest
from conftest import run_cli

from segatron_preprocess import inputs, readers, units
from segatron_preprocess.errors import PreprocessError

# every line break of str.splitlines, inside a line and between lines, in titles, headings and blank lines
SEPARATORS = ["\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\r\n", "\r\r",
              "\n\r"]
TEXT = (" = Title one = \n\n" + "".join(f" Word{k} a{s}b{k} . \n" for k, s in enumerate(SEPARATORS))
        + "\n = Title\r two = \n\n = = Head = =\r\rMore text\r\n\r\n = Third = \r\n tail\r")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """TEXT binarized by fairseq-preprocess and by segatron-preprocess (one job, and jobs of 40 bytes)."""
    tmp = tmp_path_factory.mktemp("line_ends")
    (tmp / "train.txt").write_bytes(TEXT.encode("utf-8"))
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", tmp / "train.txt", "--destdir", tmp / "fairseq",
            "--workers", 1)
    for name, jobs in (("ours", ()), ("ours_jobs", ("--workers", 2, "--chunk-bytes", 40))):
        run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "train.txt", "--destdir",
                tmp / name, *jobs)
    return tmp


@pytest.mark.parametrize("ours", ["ours", "ours_jobs"])
def test_tokens_equal_fairseq_preprocess_whatever_the_line_breaks(both, ours):
    for name in ("dict.txt", "train.bin", "train.idx"):
        assert (both / ours / name).read_bytes() == (both / "fairseq" / name).read_bytes(), name


def test_jobs_cut_only_at_document_starts(both):
    for name in ("paragraph", "sentence", "token"):
        for ext in ("bin", "idx"):
            file = f"train.{name}.{ext}"
            assert (both / "ours_jobs" / file).read_bytes() == (both / "ours" / file).read_bytes(), file


def test_raw_text_is_read_in_the_binarizers_lines(tmp_path):
    (tmp_path / "train.txt").write_bytes(TEXT.encode("utf-8"))
    for input_format in ("wikitext", "lines"):
        from_file = readers.read_units(str(tmp_path / "train.txt"), input_format, 0, len(TEXT.encode("utf-8")))
        from_text = units.read_text_units(TEXT, input_format)
        assert [(u.kind, u.text) for u in from_text] == [(u.kind, u.text) for u in from_file]
    assert units.split_lines("a\rb\r\nc\x0bd\x85e\u2028f\nlast") == ["a\r", "b\r\n", "c\x0bd\x85e\u2028f\n", "last"]


def test_line_numbers_count_the_lines_as_read(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b" = A = \r\n\r first\rsecond\x0c still second \n caf\xe9 \n")
    with pytest.raises(PreprocessError, match="train.txt: line 5 is not valid UTF-8"):
        inputs.check_text_file(str(path), "train", "wikitext")
    data = path.read_bytes()
    assert readers.line_number(str(path), data.index(b"\r\n") + 1) == 1  # the \n of a \r\n ends line 1
    assert readers.line_number(str(path), data.index(b"second")) == 4
    assert readers.line_number(str(path), data.index(b"second"), "jsonl") == 2


def test_json_lines_end_at_newlines_only(tmp_path):
    """A lone \\r between JSON tokens is white space, not a line end."""
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"text":\r"First one . Second one ."}\n{"text": "Next . Doc ."}\r\n')
    inputs.check_text_file(str(path), "train", "jsonl")
    found = [(u.kind, u.text) for u in readers.read_units(str(path), "jsonl", 0, os.path.getsize(path))]
    assert found == [(units.DOC_BREAK, ""), (units.PARAGRAPH, "First one . Second one ."),
                     (units.DOC_BREAK, ""), (units.PARAGRAPH, "Next . Doc .")]
