"""The items of a stream of units: each paragraph split into sentences of
sub-words (``Segmenter``), its token ids and its paragraph / sentence / token
indexes (``indexer.DocumentIndexer``), one item per unit as a split stores it.

This module and the ones it imports need no fairseq and no torch:
``segatron-export`` ships them with the tokenizers that compute the segment
indexes of raw text exactly as the binarizer does.
"""
import dataclasses
from typing import Iterable, Iterator, List, NamedTuple

from .indexer import DocumentIndexer
from .sentences import sentence_numbers
from .units import BLANK, DOC_BREAK, HEADING, PARAGRAPH, TITLE, Unit


@dataclasses.dataclass
class Segmenter:
    """Turns units into sentences of sub-word tokens."""

    splitter: object  # PunktSentenceTokenizer, or None when sentences are not needed
    subwords: object  # subwords.Words, subwords.SentencePiece or subwords.WordPiece
    split_headings: bool = False  # --stream-style authors: titles and headings are split like text

    def sentences(self, unit: Unit) -> List[List[str]]:
        split = unit.kind == PARAGRAPH or (self.split_headings and unit.kind in (TITLE, HEADING))
        if not split or self.splitter is None:
            return [self.subwords.encode(unit.text)]
        words = unit.text.split(" ")
        numbers = sentence_numbers(self.splitter, words)
        grouped: List[List[str]] = [[] for _ in range(numbers[-1] + 1)]
        for word, number in zip(words, numbers):
            grouped[number].append(word)
        grouped = [g for g in grouped if g]
        if self.subwords.is_whitespace:
            return grouped
        return [self.subwords.encode(" ".join(g)) for g in grouped]


@dataclasses.dataclass
class Stats:
    documents: int = 0
    paragraphs: int = 0
    sentences: int = 0
    items: int = 0
    tokens: int = 0
    unknown: int = 0
    longest_sentence: int = 0
    longest_paragraph: int = 0

    def add(self, other: "Stats") -> None:
        for field in dataclasses.fields(self):
            name = field.name
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, max(mine, theirs) if name.startswith("longest") else mine + theirs)


class Item(NamedTuple):
    """One item of a split: token ids (eos last) and their three indexes."""

    ids: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]
    unit: Unit


def items(stream: Iterable[Unit], dictionary, segmenter: Segmenter, stream_style: str,
          stats: Stats) -> Iterator[Item]:
    """The items of a stream of units, as a split stores them, counting into
    ``stats``. ``dictionary``: a fairseq ``Dictionary``, or any object with its
    ``indices`` (symbol -> id), ``unk_index`` and ``eos_index``."""
    indexer = DocumentIndexer()
    indices, unk, eos = dictionary.indices, dictionary.unk_index, dictionary.eos_index
    authors = stream_style == "authors"
    document_has_text = False
    for unit in stream:
        if unit.kind == DOC_BREAK:
            if not authors:
                indexer.start_document()
            document_has_text = False
            continue
        if unit.kind == BLANK and authors:
            continue
        if unit.kind == BLANK:
            ids = [eos]
            paragraph, sentence, token = indexer.blank_item()
        else:
            sents = segmenter.sentences(unit)
            ids = [indices.get(t, unk) for s in sents for t in s]
            # as fairseq-preprocess: a literal <unk> in the text is not a replacement
            stats.unknown += sum(1 for s in sents for t in s if t not in indices)
            ids.append(eos)
            paragraph, sentence, token = indexer.paragraph_item(sents)
            stats.paragraphs += 1
            stats.sentences += len(sents)
            stats.longest_sentence = max([stats.longest_sentence] + [len(s) for s in sents])
            stats.longest_paragraph = max(stats.longest_paragraph, len(ids) - 1)
            if not document_has_text:
                stats.documents += 1
                document_has_text = True
        stats.items += 1
        stats.tokens += len(ids)
        yield Item(ids, paragraph, sentence, token, unit)
