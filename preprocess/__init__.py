"""Segment-aware binarizer: ``segatron-preprocess`` and ``segatron-inspect``."""
