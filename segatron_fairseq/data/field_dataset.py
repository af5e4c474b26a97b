"""Views of a dataset whose items are dicts: one tensor field, or a count."""
import torch
from fairseq.data import BaseWrapperDataset


class FieldDataset(BaseWrapperDataset):
    """``dataset[i][field]``; batches like its parent's sizes say."""

    def __init__(self, dataset, field: str):
        super().__init__(dataset)
        self.field = field

    def __getitem__(self, index):
        return self.dataset[index][self.field]


class SumDataset(FieldDataset):
    """An integer field summed over the batch (e.g. how many examples had their
    indexes shifted)."""

    def collater(self, samples):
        return torch.tensor(sum(samples), dtype=torch.long)
