"""Binarize a byte range of a corpus into four aligned MMapIndexedDatasets.

``{prefix}`` holds the token ids (fairseq's format, read by
``fairseq.data.data_utils.load_indexed_dataset``); ``{prefix}.paragraph``,
``{prefix}.sentence`` and ``{prefix}.token`` hold the indexes of
``indexer.py``, one item per token item, of the same lengths (see
``corpus_format.py``).
"""
import collections
import dataclasses
from typing import Counter, Iterable, Iterator, List, NamedTuple, Optional

import numpy as np
import torch
from fairseq.data import Dictionary, indexed_dataset

from . import readers, sentences
from .corpus_format import INDEX_NAMES, index_dtypes, index_prefix
from .errors import PreprocessError
from .indexer import DocumentIndexer
from .jobs import Job


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


@dataclasses.dataclass
class Segmenter:
    """Turns units into sentences of sub-word tokens."""

    splitter: object  # PunktSentenceTokenizer, or None when sentences are not needed
    subwords: object  # subwords.Words or subwords.SentencePiece
    split_headings: bool = False  # --stream-style authors: titles and headings are split like text

    def sentences(self, unit: readers.Unit) -> List[List[str]]:
        split = unit.kind == readers.PARAGRAPH or (self.split_headings and unit.kind in (readers.TITLE,
                                                                                         readers.HEADING))
        if not split or self.splitter is None:
            return [self.subwords.encode(unit.text)]
        words = unit.text.split(" ")
        numbers = sentences.sentence_numbers(self.splitter, words)
        grouped: List[List[str]] = [[] for _ in range(numbers[-1] + 1)]
        for word, number in zip(words, numbers):
            grouped[number].append(word)
        grouped = [g for g in grouped if g]
        if self.subwords.is_whitespace:
            return grouped
        return [self.subwords.encode(" ".join(g)) for g in grouped]


def count_tokens(path: str, input_format: str, start: int, end: int, segmenter: Segmenter,
                 stream_style: str) -> Counter:
    """Token counts for the dictionary, as fairseq counts them (eos per item)."""
    counts: Counter = collections.Counter()
    eos = 0
    for unit in readers.read_units(path, input_format, start, end):
        if unit.kind == readers.DOC_BREAK or (unit.kind == readers.BLANK and stream_style == "authors"):
            continue
        eos += 1
        if unit.kind != readers.BLANK:
            for tokens in segmenter.sentences(unit):
                counts.update(tokens)
    counts[Dictionary().eos_word] += eos
    return counts


class _Builders:
    def __init__(self, prefix: str, vocab_size: int, dtypes):
        self.tokens = indexed_dataset.make_builder(
            indexed_dataset.data_file_path(prefix), impl="mmap", vocab_size=vocab_size
        )
        self.indexes = [
            indexed_dataset.MMapIndexedDatasetBuilder(
                indexed_dataset.data_file_path(index_prefix(prefix, name)), dtype=dtypes[name]
            )
            for name in INDEX_NAMES
        ]
        self.prefix = prefix

    def add(self, ids: List[int], *indexes: List[int]) -> None:
        self.tokens.add_item(torch.from_numpy(np.asarray(ids, dtype=np.int64)))
        for builder, values in zip(self.indexes, indexes):
            builder.add_item(torch.from_numpy(np.asarray(values, dtype=np.int64)))

    def finalize(self) -> None:
        self.tokens.finalize(indexed_dataset.index_file_path(self.prefix))
        for name, builder in zip(INDEX_NAMES, self.indexes):
            builder.finalize(indexed_dataset.index_file_path(index_prefix(self.prefix, name)))


class Item(NamedTuple):
    """One item of a split: token ids (eos last) and their three indexes."""

    ids: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]
    unit: readers.Unit


def items(units: Iterable[readers.Unit], dictionary: Dictionary, segmenter: Segmenter, stream_style: str,
          stats: Stats) -> Iterator[Item]:
    """The items of a stream of units, as a split stores them, counting into ``stats``."""
    indexer = DocumentIndexer()
    indices, unk, eos = dictionary.indices, dictionary.unk_index, dictionary.eos_index
    authors = stream_style == "authors"
    document_has_text = False
    for unit in units:
        if unit.kind == readers.DOC_BREAK:
            if not authors:
                indexer.start_document()
            document_has_text = False
            continue
        if unit.kind == readers.BLANK and authors:
            continue
        if unit.kind == readers.BLANK:
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


def binarize_range(
    path: str,
    input_format: str,
    start: int,
    end: int,
    out_prefix: str,
    dictionary: Dictionary,
    segmenter: Segmenter,
    stream_style: str,
) -> Stats:
    """Write the items of ``path[start:end]`` (whole documents) to ``out_prefix``.
    With the authors' stream style the paragraph index counts from 0 in this
    range; ``output.continue_paragraph_index`` makes it run over the split."""
    stats = Stats()
    dtypes = index_dtypes(stream_style)
    limits = {name: int(np.iinfo(dtype).max) for name, dtype in dtypes.items()}
    builders = _Builders(out_prefix, len(dictionary), dtypes)
    units = readers.read_units(path, input_format, start, end)
    for item in items(units, dictionary, segmenter, stream_style, stats):
        for name, largest in (("paragraph", item.paragraph[0]), ("sentence", item.sentence[-1]),
                              ("token", max(item.token))):
            if largest > limits[name]:
                raise PreprocessError(
                    f"{path}: line {readers.line_number(path, item.unit.offset)}: a {name} index exceeds "
                    f"{limits[name]} (the {name} dataset stores {np.dtype(dtypes[name]).name}); split the "
                    f"document or paragraph")
        builders.add(item.ids, item.paragraph, item.sentence, item.token)
    builders.finalize()
    return stats


class Worker:
    """Picklable callable for multiprocessing: one Job at a time."""

    def __init__(self, dictionary: Optional[Dictionary], segmenter: Segmenter, stream_style: str):
        self.dictionary = dictionary
        self.segmenter = segmenter
        self.stream_style = stream_style

    def __call__(self, job: Job):
        if job.out_prefix is None:
            return job, count_tokens(job.path, job.input_format, job.start, job.end, self.segmenter,
                                     self.stream_style)
        return job, binarize_range(job.path, job.input_format, job.start, job.end, job.out_prefix,
                                   self.dictionary, self.segmenter, self.stream_style)
