"""A split's token stream cut into batch rows for truncated BPTT.

The stream is ``[eos] + tokens``: the model reads positions 0..N-1 and
predicts positions 1..N, so every one of the split's N tokens is a target
exactly once. The stream is cut into ``batch_size * num_shards`` contiguous
rows of equal length L (the last one padded); shard s owns rows
s*batch_size .. (s+1)*batch_size-1. Item k is a whole batch: columns
[k*tgt_len, (k+1)*tgt_len) of the shard's rows, so row b of item k+1
continues row b of item k.

N = 22 tokens, batch_size = 2, num_shards = 2 (so 4 rows, L = 6), tgt_len = 4;
the inputs are positions 0..21 (e = the leading eos), the targets 1..22:

    inputs   e  t1 .. t5 | t6 .. t11       | t12 .. t17      | t18 .. t21 pad pad
             row 0       | row 1 (shard 0) | row 2           | row 3 (shard 1)

    shard 0, item 0: source [e  t1 t2 t3]   target [t1 t2 t3 t4  ]
                            [t6 t7 t8 t9]          [t7 t8 t9 t10 ]
             item 1: source [t4  t5 ]       target [t5  t6 ]
                            [t10 t11]              [t11 t12]

The sentence / paragraph start flags of each input position come from the
token and sentence indexes (``corpus_format.sentence_starts`` /
``paragraph_starts``); the leading eos starts both.
"""
import math

import numpy as np
import torch
from fairseq.data import FairseqDataset

from segatron_preprocess.corpus_format import paragraph_starts, sentence_starts

from .segment_indexed_dataset import SegmentIndexedDataset


class SegmentStreamDataset(FairseqDataset):
    def __init__(self, corpus: SegmentIndexedDataset, eos: int, pad: int, batch_size: int, tgt_len: int,
                 num_shards: int = 1, shard_id: int = 0):
        if batch_size < 1 or tgt_len < 1:
            raise ValueError(f"batch_size ({batch_size}) and tgt_len ({tgt_len}) must be positive")
        self.corpus = corpus  # owns the memory maps the arrays below point into
        self.tokens = corpus.token_array()
        self.token_index = corpus.index_array("token")
        self.sentence_index = corpus.index_array("sentence")
        self.eos, self.pad = eos, pad
        self.batch_size, self.tgt_len = batch_size, tgt_len
        self.num_tokens_total = len(self.tokens)
        rows = batch_size * num_shards
        self.row_len = max(1, math.ceil(self.num_tokens_total / rows))
        self.row_starts = np.arange(shard_id * batch_size, (shard_id + 1) * batch_size) * self.row_len
        self.num_batches = math.ceil(self.row_len / tgt_len)
        self.sizes = np.full(self.num_batches, batch_size * tgt_len, dtype=np.int64)

    def _stream(self, start: int, stop: int):
        """Stream positions [start, stop) clipped to the split: tokens and the
        sentence / paragraph start flags of each position."""
        stop = min(stop, self.num_tokens_total)
        if start >= stop:
            empty = np.zeros(0, dtype=bool)
            return np.zeros(0, dtype=np.int64), empty, empty
        # stream position i holds token i-1; position 0 is the leading eos
        lo = max(start - 1, 0)
        tokens = self.tokens[lo:stop - 1].astype(np.int64)
        token_index = self.token_index[lo:stop - 1]
        sentence_index = self.sentence_index[lo:stop - 1]
        sentences = sentence_starts(token_index)
        paragraphs = paragraph_starts(token_index, sentence_index)
        if start == 0:
            tokens = np.concatenate([[self.eos], tokens])
            sentences = np.concatenate([[True], sentences])
            paragraphs = np.concatenate([[True], paragraphs])
        return tokens, sentences, paragraphs

    def _target(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, self.num_tokens_total)
        return self.tokens[start:stop].astype(np.int64) if start < stop else np.zeros(0, dtype=np.int64)

    def __getitem__(self, index: int):
        source = torch.full((self.batch_size, self.tgt_len), self.pad, dtype=torch.long)
        target = torch.full_like(source, self.pad)
        sentence_starts = torch.zeros(self.batch_size, self.tgt_len, dtype=torch.bool)
        paragraph_starts = torch.zeros_like(sentence_starts)
        offset = index * self.tgt_len
        length = min(self.tgt_len, self.row_len - offset)
        for row, row_start in enumerate(self.row_starts):
            start = int(row_start) + offset
            tokens, sentences, paragraphs = self._stream(start, start + length)
            n = len(tokens)
            source[row, :n] = torch.from_numpy(tokens)
            target[row, :n] = torch.from_numpy(self._target(start, start + n))
            sentence_starts[row, :n] = torch.from_numpy(sentences)
            paragraph_starts[row, :n] = torch.from_numpy(paragraphs)
        columns = slice(0, length)
        return {"id": index, "source": source[:, columns].contiguous(), "target": target[:, columns].contiguous(),
                "sentence_starts": sentence_starts[:, columns].contiguous(),
                "paragraph_starts": paragraph_starts[:, columns].contiguous()}

    def __len__(self) -> int:
        return self.num_batches

    def collater(self, samples):
        """Each item is already a batch; fairseq asks for one at a time."""
        if len(samples) == 0:
            return {}
        assert len(samples) == 1, "SegmentStreamDataset batches are single items"
        item = samples[0]
        target = item["target"]
        return {
            "id": torch.arange(self.batch_size) + item["id"] * self.batch_size,
            "nsentences": self.batch_size,
            "ntokens": int(target.ne(self.pad).sum()),
            "net_input": {
                "src_tokens": item["source"],
                "sentence_starts": item["sentence_starts"],
                "paragraph_starts": item["paragraph_starts"],
            },
            "target": target,
        }

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    def ordered_indices(self):
        return np.arange(len(self))
