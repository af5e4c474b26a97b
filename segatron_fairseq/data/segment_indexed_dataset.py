"""The split reader of ``segatron_preprocess.split_reader`` as a fairseq
dataset: items are ``SegmentItem``s (token ids and their paragraph / sentence
/ token indexes), sizes their token counts."""
from fairseq.data import FairseqDataset

from segatron_preprocess.split_reader import SegmentItem, SplitReader

__all__ = ["SegmentIndexedDataset", "SegmentItem"]


class SegmentIndexedDataset(SplitReader, FairseqDataset):
    def num_tokens(self, index: int) -> int:
        return int(self.tokens.sizes[index])

    def size(self, index: int) -> int:
        return int(self.tokens.sizes[index])
