"""Corpus readers: turn the lines of an input file into document units
(``units.Unit``).

Each input format is read line by line from a byte range of the file, so that
worker processes can share one file. Text (``wikitext``, ``lines``) is read in
the lines of fairseq-preprocess, which end at \\n, \\r\\n or a lone \\r
(``units.split_lines``); a JSON-lines file (``jsonl``) in lines that end at
\\n. ``offset`` is the byte offset of the unit's line in the file; messages
turn it into a line number with ``line_number``.
"""
import json
import os
from typing import Iterator, List, Optional, Tuple

from .errors import PreprocessError
from .staging import check_interrupted
from .units import (
    DOC_BREAK,
    PARAGRAPH,
    Unit,
    is_wikitext_title,
    lines_units,
    normalize,
    split_lines,
    wikitext_units,
)

INPUT_FORMATS = ("wikitext", "lines", "jsonl")


def _newline_lines(path: str, input_format: str, start: int, end: int) -> Iterator[Tuple[int, str]]:
    """``(offset, text)`` of the lines of ``path``, each ending at \\n, that start
    in ``[start, end)``; a SIGTERM or SIGINT noted meanwhile stops the reading
    (``check_interrupted``)."""
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
                    f"{path}: line {line_number(path, position, input_format)} is not valid UTF-8 "
                    f"({err.reason} at byte {err.start} of the line)"
                ) from None
            yield position, text
            position += len(raw)


def iter_lines(path: str, input_format: str, start: int, end: int) -> Iterator[Tuple[int, str]]:
    """``(offset, text)`` of the lines of ``path`` that start in ``[start, end)``,
    as ``input_format`` reads them (``start`` is a line start)."""
    lines = _newline_lines(path, input_format, start, end)
    if input_format == "jsonl":
        return lines
    return _split_at_lone_returns(lines)


def _split_at_lone_returns(lines: Iterator[Tuple[int, str]]) -> Iterator[Tuple[int, str]]:
    for offset, text in lines:
        if "\r" not in text:
            yield offset, text
            continue
        for line in split_lines(text):
            yield offset, line
            offset += len(line.encode("utf-8"))


def line_number(path: str, offset: int, input_format: Optional[str] = None) -> int:
    """1-based number of the line that holds byte ``offset``, lines ending as
    ``input_format`` reads them (None: as text, at \\n, \\r\\n or a lone \\r)."""
    count = 1
    lone_returns_end_lines = input_format != "jsonl"
    with open(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(remaining, 1 << 24))
            if not block:
                break
            remaining -= len(block)
            count += block.count(b"\n")
            if lone_returns_end_lines:
                count += block.count(b"\r") - block.count(b"\r\n")
                if block.endswith(b"\r") and f.peek(1)[:1] == b"\n":
                    count -= 1  # a \r\n across the blocks, or at the end of the range: one line end
    return count


def read_units(path: str, input_format: str, start: int, end: int) -> Iterator[Unit]:
    lines = iter_lines(path, input_format, start, end)
    if input_format == "wikitext":
        return wikitext_units(lines)
    if input_format == "lines":
        return lines_units(lines)
    if input_format == "jsonl":
        return _jsonl_units(path, lines)
    raise ValueError(f"unknown input format {input_format!r}")


def document_text(line: str) -> str:
    """The string ``text`` field of the JSON-lines document ``line``;
    ``ValueError`` saying what ``line`` is instead."""
    try:
        document = json.loads(line)
    except RecursionError:
        raise ValueError("nests its JSON deeper than Python's json module reads") from None
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("text"), str):
        raise ValueError("is not a JSON object with a string 'text' field")
    return document["text"]


def _jsonl_units(path, lines) -> Iterator[Unit]:
    for offset, raw in lines:
        if not raw.strip():
            continue
        try:
            body = document_text(raw)
        except ValueError as err:
            raise PreprocessError(f"{path}: line {line_number(path, offset, 'jsonl')} {err}") from None
        yield Unit(DOC_BREAK, "", offset)
        for paragraph in body.split("\n"):
            text = normalize(paragraph)
            if text:
                yield Unit(PARAGRAPH, text, offset)


def _can_start_chunk(input_format: str, line: bytes) -> bool:
    """A chunk may start at a line (ending at \\n) where the reader starts a new
    document: any jsonl line; in text, where its first line (up to a lone
    \\r) is blank (``lines``) or a WikiText title."""
    if input_format == "jsonl":
        return True
    first = line.split(b"\r", 1)[0]
    if input_format == "lines":
        return not first.strip()
    try:
        return is_wikitext_title(normalize(first.decode("utf-8")))
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
