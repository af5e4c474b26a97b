from .cross_sequence_layer import CrossSequenceLayer
from .segment_distances import ORIGINS, SegmentDistances, last_query_table, segment_part_dims, sinusoid_table
from .segment_relative_attention import SegmentRelativeMultiheadAttention, rel_shift
from .segatron_xl_layer import SegatronXLLayer

__all__ = [
    "CrossSequenceLayer",
    "ORIGINS",
    "SegmentDistances",
    "SegmentRelativeMultiheadAttention",
    "SegatronXLLayer",
    "last_query_table",
    "rel_shift",
    "segment_part_dims",
    "sinusoid_table",
]
