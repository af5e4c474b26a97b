"""Pre-training blocks of the cloze two-tower model: each document of a
binarized split (its ``</s>`` left out) cut into consecutive blocks of
``max_tokens - 2`` tokens, which run across sentence and paragraph
boundaries but never across documents; each block is wrapped in the sample
boundary marker ``<s>`` (the paper's) at both ends.

Every token of a block is a target; the two ``<s>`` are not (target = pad
there). The indexes count from the block's first token (``from_block_start``;
each ``<s>`` takes its neighbour's, as ``segments.layout_of_texts`` lays them out)
and are clipped to the index tables, never shifted: SegaBERT's shift looks at
the block's largest index, which would tell the forward tower how many
boundaries lie to its right (the backward tower counts from the block's end:
``modules.backward_tower_indexes``).

    corpus indexes of a block    paragraph 7 7 7 8 8   sentence 4 5 5 0 1   token 9 0 1 0 0
    from the block's start       paragraph 0 0 0 1 1   sentence 0 1 1 0 1   token 0 0 1 0 0
"""
from typing import Dict

import numpy as np
import torch
from fairseq.data import FairseqDataset

from segatron_fairseq.segments import Layout, Text, layout_of_texts
from segatron_preprocess.corpus_format import INDEX_NAMES, document_starts

from .segment_indexed_dataset import SegmentIndexedDataset


def from_block_start(indexes: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Each level's (N,) corpus indexes of one block (in document order),
    counted from its first token: the first paragraph becomes paragraph 0, the
    first sentence sentence 0 of it, its first token token 0."""
    counted, same_group = {}, None
    for level in INDEX_NAMES:
        values = np.asarray(indexes[level], dtype=np.int64)
        in_first_group = np.ones(len(values), dtype=bool) if same_group is None else same_group
        counted[level] = values - np.where(in_first_group, values[:1], 0) if len(values) else values
        same_group = in_first_group & (values == values[:1])
    return counted


def block_layout(tokens: np.ndarray, indexes: Dict[str, np.ndarray], bos: int,
                 index_limits: Dict[str, int]) -> Layout:
    """``<s> tokens <s>`` with its indexes counted from the block's start and
    clipped to tables of ``index_limits`` rows."""
    return layout_of_texts([Text(tokens, from_block_start(indexes))], bos, bos, index_limits)


def block_target(layout_tokens: np.ndarray, pad: int) -> np.ndarray:
    """The targets of a block: its tokens, pad at the two boundary markers."""
    target = layout_tokens.copy()
    target[[0, -1]] = pad
    return target


class ClozeBlockDataset(FairseqDataset):
    """Items: ``tokens`` (T,), ``target`` (T,) and each level's index (T,);
    sizes are T, in corpus order."""

    def __init__(self, corpus: SegmentIndexedDataset, bos: int, eos: int, pad: int, max_tokens: int,
                 index_limits: Dict[str, int]):
        if max_tokens < 3:
            raise ValueError(f"--tokens-per-sample {max_tokens}: a block needs room for two <s> and a token "
                             "(at least 3)")
        tokens = corpus.token_array()
        keep = tokens != eos
        self.tokens = tokens[keep]
        self.indexes = {name: corpus.index_array(name)[keep] for name in INDEX_NAMES}
        if not len(self.tokens):
            raise ValueError(f"{corpus.prefix}: no tokens")
        starts = np.flatnonzero(document_starts(*(self.indexes[name] for name in ("token", "sentence", "paragraph"))))
        starts = np.union1d([0], starts)
        stops = np.append(starts[1:], len(self.tokens))
        budget = max_tokens - 2
        block_starts = [np.arange(start, stop, budget) for start, stop in zip(starts, stops)]
        self.starts = np.concatenate(block_starts)
        self.stops = np.minimum(self.starts + budget, np.repeat(stops, [len(b) for b in block_starts]))
        self.documents = len(starts)
        self.bos, self.pad = bos, pad
        self.index_limits = dict(index_limits)
        self._sizes = (self.stops - self.starts + 2).astype(np.int64)

    @property
    def sizes(self):
        return self._sizes

    def __len__(self):
        return len(self.starts)

    def num_tokens(self, index):
        return int(self._sizes[index])

    def size(self, index):
        return int(self._sizes[index])

    def __getitem__(self, index: int):
        lo, hi = self.starts[index], self.stops[index]
        layout = block_layout(self.tokens[lo:hi], {name: values[lo:hi] for name, values in self.indexes.items()},
                              self.bos, self.index_limits)
        return {"tokens": torch.from_numpy(layout.tokens),
                "target": torch.from_numpy(block_target(layout.tokens, self.pad)),
                **{name: torch.from_numpy(values) for name, values in layout.indexes.items()}}
