"""SegaBERT pre-training examples: whole sentences of one document.

For each example (Segatron, "Data preparation"): a document drawn with
probability proportional to its length, a start sentence drawn uniformly in
it, then whole sentences appended while the example (with [CLS] and [SEP])
fits in ``max_tokens`` or until the document ends; a single sentence longer
than that is truncated. Examples never cross documents. ``</s>`` tokens of the
binarized corpus (ends of items, blank lines) are left out.

Each example holds token ids with [CLS] (dictionary.bos) first and [SEP]
(dictionary.eos) last, and its paragraph / sentence / token indexes; [CLS] and
[SEP] take the indexes of their neighbouring token. Indexes above a table's
last row follow the paper (``segments.fit_to_table``): the example's indexes
of that kind are shifted down as far as needed, never below 0, then clipped
(``shifted``/``clipped`` say whether that happened).

The layout of all examples of an epoch is drawn at ``set_epoch`` from a
generator seeded with (seed, epoch), so an example depends only on (seed,
epoch, index).
"""
import math
from typing import Dict

import numpy as np
import torch
from fairseq.data import FairseqDataset

from segatron_fairseq.segments import layout_of_run
from segatron_preprocess.corpus_format import INDEX_NAMES, document_starts, sentence_starts

from .segment_indexed_dataset import SegmentIndexedDataset


class SentenceTable:
    """Sentences of a binarized split: flat start/stop positions, lengths
    without ``</s>``, and the documents they belong to."""

    def __init__(self, corpus: SegmentIndexedDataset, eos: int):
        tokens = corpus.token_array()
        token_index = corpus.index_array("token")
        sentence_index = corpus.index_array("sentence")
        paragraph_index = corpus.index_array("paragraph")
        eos_positions = np.flatnonzero(tokens == eos)
        starts = np.flatnonzero(sentence_starts(token_index))
        starts = starts[tokens[starts] != eos]
        if len(starts) == 0:
            raise ValueError(f"{corpus.prefix}: no sentences found")
        stops = np.append(starts[1:], len(tokens))
        eos_inside = np.searchsorted(eos_positions, stops) - np.searchsorted(eos_positions, starts)
        self.starts, self.stops = starts, stops
        self.lengths = (stops - starts - eos_inside).astype(np.int64)
        first_of_document = document_starts(token_index[starts], sentence_index[starts], paragraph_index[starts])
        first_of_document[0] = True
        self.document = np.cumsum(first_of_document) - 1
        self.document_first = np.flatnonzero(first_of_document)
        self.document_sentences = np.diff(np.append(self.document_first, len(starts)))
        self.cumulative = np.concatenate([[0], np.cumsum(self.lengths)])
        self.document_lengths = (self.cumulative[self.document_first + self.document_sentences]
                                 - self.cumulative[self.document_first])


class DocumentExampleDataset(FairseqDataset):
    def __init__(self, corpus: SegmentIndexedDataset, bos: int, eos: int, max_tokens: int,
                 index_limits: Dict[str, int], seed: int, num_examples: int = 0):
        if max_tokens < 3:
            raise ValueError(f"--tokens-per-sample {max_tokens}: examples need room for [CLS], [SEP] and a token "
                             "(at least 3)")
        self.corpus = corpus
        self.tokens = corpus.token_array()
        self.indexes = {name: corpus.index_array(name) for name in INDEX_NAMES}
        self.bos, self.eos = bos, eos
        self.max_tokens, self.index_limits, self.seed = max_tokens, dict(index_limits), seed
        self.table = SentenceTable(corpus, eos)
        total = int(self.table.lengths.sum())
        self.num_examples = num_examples or max(1, math.ceil(total / (max_tokens - 2)))
        self.first_sentence = np.zeros(self.num_examples, dtype=np.int64)
        self.end_sentence = np.zeros(self.num_examples, dtype=np.int64)
        self._sizes = np.zeros(self.num_examples, dtype=np.int64)
        self.epoch = None
        self.set_epoch(1)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # the examples change with the epoch

    def set_epoch(self, epoch: int):
        if epoch == self.epoch:
            return
        self.epoch = epoch
        table = self.table
        rng = np.random.default_rng([self.seed, epoch])
        weights = table.document_lengths / table.document_lengths.sum()
        documents = rng.choice(len(weights), size=self.num_examples, p=weights)
        first = table.document_first[documents]
        count = table.document_sentences[documents]
        start = first + np.minimum((rng.random(self.num_examples) * count).astype(np.int64), count - 1)
        budget = self.max_tokens - 2
        end = np.searchsorted(table.cumulative, table.cumulative[start] + budget, side="right") - 1
        end = np.clip(end, start + 1, first + count)
        self.first_sentence[:] = start
        self.end_sentence[:] = end
        self._sizes[:] = np.minimum(table.cumulative[end] - table.cumulative[start], budget) + 2

    @property
    def sizes(self):
        return self._sizes

    def __len__(self):
        return self.num_examples

    def num_tokens(self, index):
        return int(self._sizes[index])

    def size(self, index):
        return int(self._sizes[index])

    def __getitem__(self, index: int):
        table = self.table
        lo = table.starts[self.first_sentence[index]]
        hi = table.stops[self.end_sentence[index] - 1]
        layout = layout_of_run(
            self.tokens[lo:hi], {name: values[lo:hi] for name, values in self.indexes.items()}, self.bos, self.eos,
            self.max_tokens, self.index_limits)
        item = {"tokens": torch.from_numpy(layout.tokens),
                **{name: torch.from_numpy(values) for name, values in layout.indexes.items()}}
        item["shifted"], item["clipped"] = int(layout.shifted), int(layout.clipped)
        return item

    def ordered_indices(self):
        return np.arange(self.num_examples)
