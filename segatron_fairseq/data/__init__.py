from .cloze_blocks import ClozeBlockDataset, block_layout, block_target
from .document_examples import DocumentExampleDataset, SentenceTable
from .field_dataset import FieldDataset, SumDataset
from .permutation_lm import PermutationLMDataset, permutation_sample
from .segment_indexed_dataset import SegmentIndexedDataset, SegmentItem
from .segment_stream_dataset import SegmentStreamDataset
from .sentence_order import SentenceOrderDataset
from .short_sequences import ShortSequenceDataset, ShortSequenceSampleDataset

__all__ = [
    "ClozeBlockDataset",
    "DocumentExampleDataset",
    "FieldDataset",
    "PermutationLMDataset",
    "SegmentIndexedDataset",
    "SegmentItem",
    "SegmentStreamDataset",
    "SentenceOrderDataset",
    "SentenceTable",
    "ShortSequenceDataset",
    "ShortSequenceSampleDataset",
    "SumDataset",
    "block_layout",
    "block_target",
    "permutation_sample",
]
