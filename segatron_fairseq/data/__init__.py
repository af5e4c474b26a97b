from .segment_indexed_dataset import SegmentIndexedDataset, SegmentItem
from .segment_stream_dataset import SegmentStreamDataset

__all__ = ["SegmentIndexedDataset", "SegmentItem", "SegmentStreamDataset"]
