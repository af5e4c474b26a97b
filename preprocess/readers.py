"""Corpus readers: turn the lines of an input file into document units
(``units.Unit``).

Each input format is read line by line from a byte range of the file, so that
worker processes can share one file. ``offset`` is the byte offset of the
unit's line in the file; messages turn it into a line number with
``line_number``.
"""
import json
import os
from typing import Iterator, List, Tuple

from .errors import PreprocessError
from .staging import check_interrupted
from .units import DOC_BREAK, PARAGRAPH, Unit, is_wikitext_title, lines_units, normalize, wikitext_units

INPUT_FORMATS = ("wikitext", "lines", "jsonl")


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
        return wikitext_units(lines)
    if input_format == "lines":
        return lines_units(lines)
    if input_format == "jsonl":
        return _jsonl_units(path, lines)
    raise ValueError(f"unknown input format {input_format!r}")


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
