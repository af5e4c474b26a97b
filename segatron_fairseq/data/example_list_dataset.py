"""In-memory fine-tuning examples: items are their indexes, the subclass's
collater builds the batch, batches group examples of similar size."""
import numpy as np
import torch
from fairseq.data import FairseqDataset, data_utils


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


def segment_net_input(tokens, paragraph, sentence, token, token_type, pad: int) -> dict:
    """SegaBERT's ``net_input`` from one list per field, each holding every
    example's values: ids padded with ``pad``, indexes and token types with 0."""
    def padded(values, value):
        return data_utils.collate_tokens([torch.tensor(v) for v in values], value)

    return {"src_tokens": padded(tokens, pad), "src_lengths": torch.tensor([len(t) for t in tokens]),
            "paragraph_index": padded(paragraph, 0), "sentence_index": padded(sentence, 0),
            "token_index": padded(token, 0), "token_type": padded(token_type, 0)}
