"""The units a corpus is read into, and raw text read as units.

A reader yields ``Unit`` records:

- ``DOC_BREAK``: the next unit starts a new document (no item is written);
- ``TITLE``: a heading that starts a document (WikiText ``= Title =``);
- ``HEADING``: a section heading, one paragraph of one sentence;
- ``PARAGRAPH``: text, split into sentences;
- ``BLANK``: an empty line that fairseq-preprocess writes as an eos-only item
  (WikiText only, so that the token stream equals fairseq's).

This module imports the standard library only: ``segatron-export`` ships it
with the tokenizers that compute the segment indexes of raw text.
"""
import io
import re
from typing import Iterable, Iterator, List, NamedTuple, Tuple

DOC_BREAK, TITLE, HEADING, PARAGRAPH, BLANK = "doc_break", "title", "heading", "paragraph", "blank"

# fairseq.tokenizer.tokenize_line normalises every whitespace run to one space.
_WHITESPACE = re.compile(r"\s+")


class Unit(NamedTuple):
    kind: str
    text: str  # whitespace-normalised, stripped
    offset: int  # of the unit's line: bytes in a file, characters in a text


def split_lines(text: str) -> List[str]:
    """The lines of ``text`` with their line ends, as fairseq-preprocess reads a file (Python's universal
    newlines): a line ends at \\n, \\r\\n or a lone \\r; the other line breaks of ``str.splitlines``
    (\\x0b, \\x0c, \\x1c-\\x1e, \\x85, \\u2028, \\u2029) are white space inside it."""
    return io.StringIO(text, newline="").readlines()


def normalize(line: str) -> str:
    return _WHITESPACE.sub(" ", line).strip()


def is_wikitext_title(text: str) -> bool:
    """``= Title =`` (a document start), not ``= = Section = =``."""
    return text.startswith("= ") and text.endswith(" =") and not text.startswith("= =")


def is_wikitext_heading(text: str) -> bool:
    return text.startswith("= =") and text.endswith("= =")


def wikitext_units(lines: Iterable[Tuple[int, str]]) -> Iterator[Unit]:
    """Units of ``(offset, line)`` pairs of a WikiText file."""
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


def lines_units(lines: Iterable[Tuple[int, str]]) -> Iterator[Unit]:
    """Units of ``(offset, line)`` pairs of a ``lines`` file: a line is a
    paragraph, a blank line ends a document."""
    for offset, raw in lines:
        text = normalize(raw)
        yield Unit(PARAGRAPH, text, offset) if text else Unit(DOC_BREAK, "", offset)


def read_text_units(text: str, input_format: str) -> Iterator[Unit]:
    """The units of ``text`` read as a whole file of ``input_format``
    (``wikitext`` or ``lines``; offsets are character offsets)."""
    lines, offset = [], 0
    for line in split_lines(text):
        lines.append((offset, line))
        offset += len(line)
    if input_format == "wikitext":
        return wikitext_units(lines)
    if input_format == "lines":
        return lines_units(lines)
    raise ValueError(f"raw text is read as wikitext or lines, not {input_format!r}")
