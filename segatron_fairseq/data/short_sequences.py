"""Samples of M short sequences of L tokens.

``ShortSequenceDataset`` pads items of up to M*L tokens to M*L and reshapes
them to (B, M, L) in the collater. ``ShortSequenceSampleDataset`` is the
sample dataset of pre-training: its ``sizes`` are the samples' token totals
(what ``--max-tokens`` counts) and its ``sequence_sizes`` the longest short
sequence of each sample (what the model's positions limit).
"""
import numpy as np
from fairseq.data import BaseWrapperDataset, NestedDictionaryDataset, data_utils


class ShortSequenceDataset(BaseWrapperDataset):
    def __init__(self, dataset, num_sequences: int, sequence_length: int, pad: int):
        super().__init__(dataset)
        self.num_sequences, self.sequence_length, self.pad = num_sequences, sequence_length, pad

    def collater(self, samples):
        if not samples:
            return {}
        total = self.num_sequences * self.sequence_length
        if max(len(s) for s in samples) > total:
            raise ValueError(f"an item is longer than {self.num_sequences} x {self.sequence_length} tokens")
        tokens = data_utils.collate_tokens(samples, self.pad, pad_to_length=total)
        return tokens.view(len(samples), self.num_sequences, self.sequence_length)


class ShortSequenceSampleDataset(NestedDictionaryDataset):
    def __init__(self, definition, sample_sizes, sequence_length: int):
        super().__init__(definition, sizes=[sample_sizes])
        self.sequence_sizes = np.minimum(np.asarray(sample_sizes), sequence_length)
