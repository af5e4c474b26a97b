from .segment_distances import SegmentDistances, segment_part_dims, sinusoid_table
from .segment_relative_attention import SegmentRelativeMultiheadAttention, rel_shift
from .segatron_xl_layer import SegatronXLLayer

__all__ = [
    "SegmentDistances",
    "SegmentRelativeMultiheadAttention",
    "SegatronXLLayer",
    "rel_shift",
    "segment_part_dims",
    "sinusoid_table",
]
