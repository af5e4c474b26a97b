"""Read the four aligned datasets written by ``segatron-preprocess``.

For a split prefix ``DIR/train``: ``train.bin/.idx`` (token ids, fairseq's
MMapIndexedDataset) and ``train.paragraph``, ``train.sentence``,
``train.token`` (uint16 indexes, one per token): the format of
``segatron_preprocess.corpus_format``, which also says what the indexes mean.
"""
import os
from typing import NamedTuple

import numpy as np
import torch
from fairseq.data import FairseqDataset
from fairseq.data.indexed_dataset import MMapIndexedDataset, data_file_path, index_file_path
from segatron_preprocess.corpus_format import INDEX_NAMES, dataset_prefixes, document_starts, index_prefix


class SegmentItem(NamedTuple):
    """One item (a paragraph line plus eos): four LongTensors of shape (length,)."""

    tokens: torch.Tensor
    paragraph: torch.Tensor
    sentence: torch.Tensor
    token: torch.Tensor


def _open(prefix: str) -> MMapIndexedDataset:
    missing = [p for p in (data_file_path(prefix), index_file_path(prefix)) if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"segment-indexed dataset incomplete: missing {', '.join(missing)}")
    return MMapIndexedDataset(prefix)


class SegmentIndexedDataset(FairseqDataset):
    """Token ids with their paragraph/sentence/token indexes, item by item.

    Raises ``ValueError`` naming the files when the four datasets do not have
    the same number of items with the same lengths.
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.tokens = _open(prefix)
        self.indexes = {name: _open(index_prefix(prefix, name)) for name in INDEX_NAMES}
        for name, dataset in self.indexes.items():
            other = index_prefix(prefix, name)
            if len(dataset) != len(self.tokens):
                raise ValueError(
                    f"{index_file_path(other)} has {len(dataset)} items but {index_file_path(prefix)} has "
                    f"{len(self.tokens)}: the segment index datasets do not belong to these tokens"
                )
            if not np.array_equal(dataset.sizes, self.tokens.sizes):
                first = int(np.flatnonzero(dataset.sizes != self.tokens.sizes)[0])
                raise ValueError(
                    f"{index_file_path(other)} and {index_file_path(prefix)} differ in length at item {first} "
                    f"({dataset.sizes[first]} vs {self.tokens.sizes[first]} tokens)"
                )

    @staticmethod
    def exists(prefix: str) -> bool:
        return all(MMapIndexedDataset.exists(p) for p in dataset_prefixes(prefix))

    def __getitem__(self, index: int) -> SegmentItem:
        return SegmentItem(
            self.tokens[index].long(), *(self.indexes[name][index].long() for name in INDEX_NAMES)
        )

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def sizes(self) -> np.ndarray:
        return self.tokens.sizes

    def num_tokens(self, index: int) -> int:
        return int(self.tokens.sizes[index])

    def size(self, index: int) -> int:
        return int(self.tokens.sizes[index])

    def token_array(self) -> np.ndarray:
        """All token ids of the split, flattened (memory-mapped)."""
        return np.frombuffer(self.tokens._bin_buffer, dtype=self.tokens._index.dtype, count=int(self.sizes.sum()))

    def index_array(self, name: str) -> np.ndarray:
        """All values of index ``name`` over the split, flattened (uint16)."""
        dataset = self.indexes[name]
        return np.frombuffer(dataset._bin_buffer, dtype=dataset._index.dtype, count=int(self.sizes.sum()))

    def document_starts(self) -> np.ndarray:
        """Item numbers whose first token starts a document (all indexes 0)."""
        nonempty = np.flatnonzero(self.sizes > 0)
        first = (np.cumsum(self.sizes) - self.sizes)[nonempty]
        starts = document_starts(*(self.index_array(name)[first] for name in ("token", "sentence", "paragraph")))
        return nonempty[starts]
