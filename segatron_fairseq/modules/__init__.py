from .biased_adaptive_softmax import BiasedAdaptiveSoftmax
from .cross_sequence_layer import CrossSequenceLayer
from .factorized_embedding import FactorizedLMHead, FactorizedTransformerEncoder
from .index_embeddings import add_index_embeddings
from .segatron_xl_layer import SegatronXLLayer
from .segment_distances import (
    ORIGINS,
    SegmentDistances,
    distance_sinusoids,
    last_query_distances,
    segment_part_dims,
    sinusoid_table,
)
from .segment_relative_attention import SegmentRelativeMultiheadAttention, rel_shift
from .shared_layers import share_layers
from .xlnet_attention import RelativeSegments, TwoStreamRelativeAttention
from .xlnet_layer import XLNetLayer

__all__ = [
    "BiasedAdaptiveSoftmax",
    "CrossSequenceLayer",
    "FactorizedLMHead",
    "FactorizedTransformerEncoder",
    "ORIGINS",
    "SegmentDistances",
    "RelativeSegments",
    "SegmentRelativeMultiheadAttention",
    "SegatronXLLayer",
    "TwoStreamRelativeAttention",
    "XLNetLayer",
    "add_index_embeddings",
    "distance_sinusoids",
    "last_query_distances",
    "rel_shift",
    "segment_part_dims",
    "share_layers",
    "sinusoid_table",
]
