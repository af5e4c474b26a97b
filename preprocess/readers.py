"""Corpus readers: turn the lines of an input file into document units.

Each input format is read line by line from a byte range of the file, so that
worker processes can share one file. A reader yields ``Unit`` records:

- ``DOC_BREAK``: the next unit starts a new document (no item is written);
- ``TITLE``: a heading that starts a document (WikiText ``= Title =``);
- ``HEADING``: a section heading, one paragraph of one sentence;
- ``PARAGRAPH``: text, split into sentences;
- ``BLANK``: an empty line that fairseq-preprocess writes as an eos-only item
  (WikiText only, so that the token stream equals fairseq's).

``offset`` is the byte offset of the unit's line in the file; messages turn it
into a line number with ``line_number``.
"""
import json
import os
import re
from typing import Iterator, List, NamedTuple, Tuple

from .errors import PreprocessError
from .staging import check_interrupted

DOC_BREAK, TITLE, HEADING, PARAGRAPH, BLANK = "doc_break", "title", "heading", "paragraph", "blank"
INPUT_FORMATS = ("wikitext", "lines", "jsonl")

# fairseq.tokenizer.tokenize_line normalises every whitespace run to one space.
_WHITESPACE = re.compile(r"\s+")


class Unit(NamedTuple):
    kind: str
    text: str  # whitespace-normalised, stripped
    offset: int


def normalize(line: str) -> str:
    return _WHITESPACE.sub(" ", line).strip()


def is_wikitext_title(text: str) -> bool:
    """``= Title =`` (a document start), not ``= = Section = =``."""
    return text.startswith("= ") and text.endswith(" =") and not text.startswith("= =")


def is_wikitext_heading(text: str) -> bool:
    return text.startswith("= =") and text.endswith("= =")


def iter_lines(path: str, start: int, end: int) -> Iterator[Tuple[int, str]]:
    """``(offset, text)`` of the lines of ``path`` that start in ``[start, end)``;
    a SIGTERM or SIGINT noted meanwhile stops the reading (``check_interrupted``)."""
    with open(path, "rb") as f:
        f.seek(start)
        position = start
        while position < end:
            check_interrupted()
            raw = f.readline()
            if not raw:
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise PreprocessError(
                    f"{path}: line {line_number(path, position)} is not valid UTF-8 "
                    f"({err.reason} at byte {err.start} of the line)"
                ) from None
            yield position, text
            position += len(raw)


def line_number(path: str, offset: int) -> int:
    """1-based number of the line that holds byte ``offset``."""
    count = 1
    with open(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(remaining, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


def read_units(path: str, input_format: str, start: int, end: int) -> Iterator[Unit]:
    lines = iter_lines(path, start, end)
    if input_format == "wikitext":
        return _wikitext_units(lines)
    if input_format == "lines":
        return _lines_units(lines)
    if input_format == "jsonl":
        return _jsonl_units(path, lines)
    raise ValueError(f"unknown input format {input_format!r}")


def read_text_units(text: str, input_format: str) -> Iterator[Unit]:
    """The units of ``text`` read as a whole file of ``input_format``
    (``wikitext`` or ``lines``; offsets are character offsets)."""
    lines, offset = [], 0
    for line in text.splitlines(keepends=True):
        lines.append((offset, line))
        offset += len(line)
    if input_format == "wikitext":
        return _wikitext_units(lines)
    if input_format == "lines":
        return _lines_units(lines)
    raise ValueError(f"raw text is read as wikitext or lines, not {input_format!r}")


def _wikitext_units(lines) -> Iterator[Unit]:
    for offset, raw in lines:
        text = normalize(raw)
        if not text:
            yield Unit(BLANK, "", offset)
        elif is_wikitext_title(text):
            yield Unit(DOC_BREAK, "", offset)
            yield Unit(TITLE, text, offset)
        elif is_wikitext_heading(text):
            yield Unit(HEADING, text, offset)
        else:
            yield Unit(PARAGRAPH, text, offset)


def _lines_units(lines) -> Iterator[Unit]:
    for offset, raw in lines:
        text = normalize(raw)
        yield Unit(PARAGRAPH, text, offset) if text else Unit(DOC_BREAK, "", offset)


def _jsonl_units(path, lines) -> Iterator[Unit]:
    for offset, raw in lines:
        if not raw.strip():
            continue
        try:
            document = json.loads(raw)
            body = document["text"]
            if not isinstance(body, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise PreprocessError(
                f"{path}: line {line_number(path, offset)} is not a JSON object with a string 'text' field"
            ) from None
        yield Unit(DOC_BREAK, "", offset)
        for paragraph in body.split("\n"):
            text = normalize(paragraph)
            if text:
                yield Unit(PARAGRAPH, text, offset)


def _can_start_chunk(input_format: str, line: bytes) -> bool:
    """A chunk may start at a line where the reader starts a new document:
    any jsonl line, a blank line of ``lines``, a WikiText title."""
    if input_format == "jsonl":
        return True
    if input_format == "lines":
        return not line.strip()
    try:
        return is_wikitext_title(normalize(line.decode("utf-8")))
    except UnicodeDecodeError:
        return False


def document_aligned_offsets(path: str, input_format: str, num_chunks: int) -> List[int]:
    """Byte offsets ``[0, ..., size]`` that cut ``path`` into at most
    ``num_chunks`` ranges, each starting at a document start, so that every
    range can be indexed on its own."""
    size = os.path.getsize(path)
    offsets = [0]
    with open(path, "rb") as f:
        for i in range(1, num_chunks):
            f.seek(size * i // num_chunks)
            f.readline()  # to the next line start
            position = f.tell()
            if position <= offsets[-1]:
                continue
            while position < size:
                line = f.readline()
                if _can_start_chunk(input_format, line):
                    break
                position += len(line)
            if offsets[-1] < position < size:
                offsets.append(position)
    offsets.append(size)
    return offsets
