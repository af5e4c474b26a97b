"""The kinds of target token by the segment it starts, and a model's mean loss on each.

Every target of a split is of exactly one kind: the first token of a paragraph, the
first token of another sentence (one that does not start a paragraph), or any
other token. ``segatron-compare-lm`` scores each variant's test split by kind, so
its table shows where a variant gains or loses against Transformer-XL.
"""
from typing import Dict, Optional, Union

import numpy as np

# kind -> what it is, in the order of the tables and pictures
BOUNDARY_KINDS = {
    "paragraph_start": "the first token of a paragraph",
    "sentence_start": "the first token of another sentence",
    "other": "any other token",
}
# the kinds whose tokens begin a sentence (every paragraph begins one)
SENTENCE_INITIAL_KINDS = ("paragraph_start", "sentence_start")


def boundary_kind_masks(sentence_start: np.ndarray, paragraph_start: np.ndarray) -> Dict[str, np.ndarray]:
    """(N,) bools per kind of ``BOUNDARY_KINDS``: disjoint, and together every target.

    ``sentence_start`` / ``paragraph_start``: whether each target token begins a sentence / a
    paragraph (``token_losses.read_stream``)."""
    sentence_start, paragraph_start = np.asarray(sentence_start, bool), np.asarray(paragraph_start, bool)
    return {"paragraph_start": paragraph_start,
            "sentence_start": sentence_start & ~paragraph_start,
            "other": ~sentence_start & ~paragraph_start}


def losses_by_kind(losses: np.ndarray, sentence_start: np.ndarray,
                   paragraph_start: np.ndarray) -> Dict[str, Dict[str, Optional[Union[int, float]]]]:
    """Per kind: its number of targets and their mean loss in nats (``None`` for a kind with no target).

    ``losses``: (N,) the loss of every target (``token_losses.stream_losses``)."""
    kinds = {}
    for kind, mask in boundary_kind_masks(sentence_start, paragraph_start).items():
        count = int(mask.sum())
        kinds[kind] = {"tokens": count, "loss": float(losses[mask].mean()) if count else None}
    return kinds
