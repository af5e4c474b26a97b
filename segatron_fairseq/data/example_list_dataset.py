"""In-memory fine-tuning examples: items are their indexes, the subclass's
collater builds the batch, batches group examples of similar size."""
import numpy as np
from fairseq.data import FairseqDataset


class ExampleListDataset(FairseqDataset):
    def __init__(self, sizes):
        self.sizes = np.asarray(sizes, dtype=np.int64)

    def __getitem__(self, index):
        return index

    def __len__(self):
        return len(self.sizes)

    def num_tokens(self, index):
        return int(self.sizes[index])

    def size(self, index):
        return int(self.sizes[index])

    def ordered_indices(self):
        return np.argsort(self.sizes, kind="stable")
