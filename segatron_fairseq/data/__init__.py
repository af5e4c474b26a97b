from .segment_indexed_dataset import SegmentIndexedDataset, SegmentItem

__all__ = ["SegmentIndexedDataset", "SegmentItem"]
