"""Checks of the input files, all done before anything is written: each path
is a non-empty regular file of valid UTF-8 whose first text line fits the
declared ``--input-format``."""
import codecs
import os
import stat
from typing import List, Optional, Tuple

from .errors import PreprocessError
from .readers import document_text, iter_lines, line_number

_BLOCK = 16 << 20


def input_files(trainpref: Optional[str], validpref: Optional[str], testpref: Optional[str]) -> List[Tuple[str, str]]:
    """(split, path) pairs: train, valid, valid1, ..., test, test1, ..."""
    splits = []
    if trainpref:
        splits.append(("train", trainpref))
    for name, prefs in (("valid", validpref), ("test", testpref)):
        for k, path in enumerate(prefs.split(",") if prefs else []):
            splits.append((name if k == 0 else f"{name}{k}", path))
    if not splits:
        raise PreprocessError("nothing to do: give --trainpref, --validpref or --testpref")
    return splits


# what a path that is not a regular file is, by its st_mode
_KINDS = ((stat.S_ISFIFO, "a FIFO or pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (the same path, a link to it, a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)


def check_regular_file(path: str, what: str) -> None:
    """``path`` is a regular file; ``what`` says what it is for. Nothing is
    opened: a FIFO, such as a process substitution ``<(...)``, is refused
    without waiting for its writer, as the binarizer reads its files more than
    once (and its input by byte offsets)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise PreprocessError(f"{path}: {what} does not exist") from None
    except OSError as err:
        raise PreprocessError(f"{path}: {what} cannot be used ({err.strerror})") from None
    if stat.S_ISDIR(mode):
        raise PreprocessError(f"{path}: {what} is a directory, not a file")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "of another kind")
        raise PreprocessError(f"{path}: {what} is {kind}, not a regular file; it is read more than once: save the "
                              f"stream to a file and give that")


def check_file(path: str, what: str) -> None:
    """``path`` is a regular, non-empty file; ``what`` says what it is for."""
    check_regular_file(path, what)
    if os.path.getsize(path) == 0:
        raise PreprocessError(f"{path}: {what} is empty")


def load_dictionary(path: str):
    """A fairseq ``Dictionary`` from ``path``, or an error that names it."""
    from fairseq.data import Dictionary

    check_regular_file(path, "the dictionary")
    try:
        check_utf8(path)
        return Dictionary.load(path)
    except OSError as err:
        raise PreprocessError(f"{path}: cannot read the dictionary ({err.strerror})") from None
    except PreprocessError:
        raise
    except Exception as err:  # fairseq raises a bare Exception for a malformed line
        raise PreprocessError(f"{path}: not a fairseq dictionary ({err})") from None


def read_utf8(path: str) -> str:
    """The whole text of the small file ``path``; ``ValueError`` naming the
    file when it is not UTF-8 (for the plugin's configs, vocabularies and texts)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def check_utf8(path: str, input_format: Optional[str] = None) -> None:
    """The whole file decodes as UTF-8; the error names the first bad line
    (lines counted as ``input_format`` reads them, ``readers.line_number``)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        f = open(path, "rb")
    except OSError as err:
        raise PreprocessError(f"{path}: cannot read it ({err.strerror})") from None
    with f:
        while True:
            block = f.read(_BLOCK)
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as err:
                line = line_number(path, offset + max(err.start, 0), input_format)
                raise PreprocessError(f"{path}: line {line} is not valid UTF-8 ({err.reason})") from None
            if not block:
                return
            offset += len(block)


def _first_text_line(path: str, input_format: str) -> Tuple[int, str]:
    lines = iter_lines(path, input_format, 0, os.path.getsize(path))
    for number, (_, line) in enumerate(lines, start=1):
        if line.strip():
            return number, line.strip()
    return 0, ""


def check_text_file(path: str, split: str, input_format: str) -> None:
    """A non-empty UTF-8 file whose first text line is of ``input_format``."""
    check_file(path, f"input file for split '{split}'")
    check_utf8(path, input_format)
    number, line = _first_text_line(path, input_format)
    if not line:
        raise PreprocessError(f"{path}: input file for split '{split}' holds only blank lines")
    try:
        document_text(line)
        looks_jsonl = True
    except ValueError as problem:
        if input_format == "jsonl":
            raise PreprocessError(f"{path}: line {number} {problem}; is this plain text (--input-format lines or "
                                  f"wikitext)?") from None
        looks_jsonl = False
    if input_format != "jsonl" and looks_jsonl:
        raise PreprocessError(f"{path}: line {number} is a JSON document with a 'text' field, but --input-format "
                              f"is {input_format}; use --input-format jsonl")
