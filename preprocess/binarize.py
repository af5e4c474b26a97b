"""Binarize a byte range of a corpus into four aligned MMapIndexedDatasets.

``{prefix}`` holds the token ids (fairseq's format, read by
``fairseq.data.data_utils.load_indexed_dataset``); ``{prefix}.paragraph``,
``{prefix}.sentence`` and ``{prefix}.token`` hold the indexes of
``indexer.py``, one item per token item, of the same lengths (see
``corpus_format.py``).
"""
import collections
from typing import Counter, List, Optional

import numpy as np
import torch
from fairseq.data import Dictionary, indexed_dataset

from . import readers, units
from .corpus_format import INDEX_NAMES, index_dtypes, index_prefix
from .document_items import Segmenter, Stats, items
from .errors import PreprocessError
from .jobs import Job


def count_tokens(path: str, input_format: str, start: int, end: int, segmenter: Segmenter,
                 stream_style: str) -> Counter:
    """Token counts for the dictionary, as fairseq counts them (eos per item)."""
    counts: Counter = collections.Counter()
    eos = 0
    for unit in readers.read_units(path, input_format, start, end):
        if unit.kind == units.DOC_BREAK or (unit.kind == units.BLANK and stream_style == "authors"):
            continue
        eos += 1
        if unit.kind != units.BLANK:
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
    stream = readers.read_units(path, input_format, start, end)
    for item in items(stream, dictionary, segmenter, stream_style, stats):
        for name, largest in (("paragraph", item.paragraph[0]), ("sentence", item.sentence[-1]),
                              ("token", max(item.token))):
            if largest > limits[name]:
                raise PreprocessError(
                    f"{path}: line {readers.line_number(path, item.unit.offset, input_format)}: a {name} index exceeds "
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
