"""Read the four aligned datasets of a split that ``segatron-preprocess`` wrote.

For a split prefix ``DIR/train``: ``train.bin/.idx`` (token ids, fairseq's
MMapIndexedDataset) and ``train.paragraph``, ``train.sentence``,
``train.token`` (uint16 indexes, one per token): the format of
``corpus_format``, which also says what the indexes mean. ``segatron-inspect``
reads splits with it; the plugin's datasets build on it
(``segatron_fairseq.data.SegmentIndexedDataset``).
"""
import os
import struct
from typing import List, NamedTuple, Optional

import numpy as np
import torch
from fairseq.data import indexed_dataset
from fairseq.data.indexed_dataset import MMapIndexedDataset, data_file_path, index_file_path

from .corpus_format import DICT_FILE, INDEX_NAMES, dataset_files, document_starts, index_prefix
from .manifest import check_contents, check_state_and_sizes, read_split_manifest
from .split_error import SplitFileError


class SegmentItem(NamedTuple):
    """One item (a paragraph line plus eos): four LongTensors of shape (length,)."""

    tokens: torch.Tensor
    paragraph: torch.Tensor
    sentence: torch.Tensor
    token: torch.Tensor


def _check_index_file(path: str) -> None:
    """The header and length of a fairseq mmap ``.idx``: magic, version 1, a
    known dtype, then ``len`` int32 sizes and ``len`` int64 pointers."""
    magic = MMapIndexedDataset.Index._HDR_MAGIC
    header = struct.Struct(f"<{len(magic)}sQBQ")
    with open(path, "rb") as f:
        raw = f.read(header.size)
    problem = None
    if len(raw) < header.size:
        problem = f"{len(raw)} bytes, shorter than the header"
    else:
        found_magic, version, dtype_code, length = header.unpack(raw)
        expected = header.size + length * (4 + 8)
        if found_magic != magic or version != 1 or dtype_code not in indexed_dataset._code_to_dtype:
            problem = "not a fairseq mmap index header"
        elif os.path.getsize(path) != expected:
            problem = f"{os.path.getsize(path):,} bytes where its header announces {expected:,}"
    if problem:
        raise SplitFileError(f"{path}: not a complete fairseq index ({problem}); the split was not written "
                             f"completely: run segatron-preprocess again")


def _open(prefix: str) -> MMapIndexedDataset:
    """One dataset, checked: its .idx is complete and its .bin holds exactly
    the bytes the .idx describes."""
    index_path, data_path = index_file_path(prefix), data_file_path(prefix)
    _check_index_file(index_path)
    dataset = MMapIndexedDataset(prefix)
    index = dataset._index
    expected = int(index._pointers[-1]) + int(index._sizes[-1]) * index.dtype().itemsize if len(index) else 0
    actual = os.path.getsize(data_path)
    if actual != expected:
        raise SplitFileError(f"{data_path} has {actual:,} bytes but {index_path} describes {expected:,}: the file "
                             f"is truncated or from another run; run segatron-preprocess again")
    return dataset


def check_token_ids(dataset: MMapIndexedDataset, prefix: str, dictionary_size: int) -> None:
    """Every token id of ``dataset`` (the split ``prefix``) is below
    ``dictionary_size``: one pass over its memory map. For a directory of
    fairseq-preprocess, and for splits without digests, the one check that a
    ``.bin`` written with another dictionary has ids the model's embeddings do
    not have."""
    count = int(dataset.sizes.sum())
    if count == 0:
        return
    largest = int(np.frombuffer(dataset._bin_buffer, dtype=dataset._index.dtype, count=count).max())
    if largest >= dictionary_size:
        raise SplitFileError(f"{data_file_path(prefix)}: token id {largest:,} is outside the dictionary of "
                             f"{dictionary_size:,} symbols: the split was binarized with another dictionary; run "
                             f"segatron-preprocess again")


def _dictionary_size(prefix: str) -> Optional[int]:
    """The size of the dictionary beside the split (``dict.txt``), or None when there is none."""
    path = os.path.join(os.path.dirname(prefix) or ".", DICT_FILE)
    if not os.path.isfile(path):
        return None
    from fairseq.data import Dictionary

    return len(Dictionary.load(path))


class SplitReader:
    """Token ids with their paragraph/sentence/token indexes, item by item.

    Opening checks the whole set (``FileNotFoundError`` or ``SplitFileError``,
    a ``ValueError``, naming the file): all eight files present, the split's
    manifest complete (``manifest.py``), each file of the size it records, each
    .bin as long as its .idx says, the same items with the same lengths in the
    four datasets, every token id below ``dictionary_size`` (by default the
    size of the ``dict.txt`` beside the split; not checked when there is none),
    the resources and sampled blocks of the files as the manifest records them
    (with ``verify``, the whole files), and the manifest unchanged meanwhile.
    """

    def __init__(self, prefix: str, dictionary_size: Optional[int] = None, verify: bool = False):
        self.prefix = prefix
        missing = self.missing_files(prefix)
        if missing:
            raise FileNotFoundError(f"split {prefix} is incomplete: missing {', '.join(missing)} (run "
                                    f"segatron-preprocess)")
        manifest = read_split_manifest(prefix)
        check_state_and_sizes(manifest)
        self.tokens = _open(prefix)
        self.indexes = {name: _open(index_prefix(prefix, name)) for name in INDEX_NAMES}
        for name, dataset in self.indexes.items():
            other = index_prefix(prefix, name)
            if len(dataset) != len(self.tokens):
                raise SplitFileError(
                    f"{index_file_path(other)} has {len(dataset)} items but {index_file_path(prefix)} has "
                    f"{len(self.tokens)}: the segment index datasets do not belong to these tokens"
                )
            if not np.array_equal(dataset.sizes, self.tokens.sizes):
                first = int(np.flatnonzero(dataset.sizes != self.tokens.sizes)[0])
                raise SplitFileError(
                    f"{index_file_path(other)} and {index_file_path(prefix)} differ in length at item {first} "
                    f"({dataset.sizes[first]} vs {self.tokens.sizes[first]} tokens)"
                )
        if dictionary_size is None:
            dictionary_size = _dictionary_size(prefix)
        if dictionary_size is not None:
            check_token_ids(self.tokens, prefix, dictionary_size)
        check_contents(manifest, verify)
        if read_split_manifest(prefix) != manifest:
            raise SplitFileError(f"{prefix}: segatron-preprocess rewrote this split while it was being opened; "
                                 f"open it again")

    @staticmethod
    def missing_files(prefix: str) -> List[str]:
        """The split's files that do not exist."""
        return [path for path in dataset_files(prefix) if not os.path.isfile(path)]

    def __getitem__(self, index: int) -> SegmentItem:
        return SegmentItem(
            self.tokens[index].long(), *(self.indexes[name][index].long() for name in INDEX_NAMES)
        )

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def sizes(self) -> np.ndarray:
        return self.tokens.sizes

    def token_array(self) -> np.ndarray:
        """All token ids of the split, flattened: a view of the memory map,
        valid while this dataset lives (keep a reference, or copy it)."""
        return np.frombuffer(self.tokens._bin_buffer, dtype=self.tokens._index.dtype, count=int(self.sizes.sum()))

    def index_array(self, name: str) -> np.ndarray:
        """All values of index ``name`` over the split, flattened: a view of
        the memory map, valid while this dataset lives."""
        dataset = self.indexes[name]
        return np.frombuffer(dataset._bin_buffer, dtype=dataset._index.dtype, count=int(self.sizes.sum()))

    def document_starts(self) -> np.ndarray:
        """Item numbers whose first token starts a document (all indexes 0)."""
        nonempty = np.flatnonzero(self.sizes > 0)
        first = (np.cumsum(self.sizes) - self.sizes)[nonempty]
        starts = document_starts(*(self.index_array(name)[first] for name in ("token", "sentence", "paragraph")))
        return nonempty[starts]
