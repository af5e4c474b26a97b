"""Batches of M short sequences of L tokens: items of up to M*L tokens are
padded to M*L and reshaped to (B, M, L) by the collater."""
from fairseq.data import BaseWrapperDataset, data_utils


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
