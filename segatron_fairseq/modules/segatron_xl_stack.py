"""Segatron-XL's layer stack over one segment after its memory: the segment
counters of the segment's start flags (going on from the memory's), the
distances of Eq. 3 (or the authors' ``window_end`` ones), the causal (or
same-length) mask and the layers with their u / v biases.

The fairseq decoder (``models/segatron_xl.py``) and the exported Hugging Face
model (``conversion/exporters/hf_segatron_xl/``) both run it: like its
siblings it imports only torch and the standard library, so the exporter
ships it as remote code.
"""
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import torch
from torch import Tensor, nn

from .segment_distances import SEGMENT_LEVELS, SegmentDistances
from .segment_memory import CachedWindow, SegmentMemory


def segment_starts(part_dims: Dict[str, int], sentence_starts: Optional[Tensor], paragraph_starts: Optional[Tensor],
                   missing: str = "Segatron-XL with a {part} part needs {part}_starts in the input"
                   ) -> Dict[str, Tensor]:
    """The start flags (B, T) bool of the enabled segment parts (part -> flags); a missing one is refused with
    ``missing`` (formatted with the ``part``)."""
    given = {"sentence": sentence_starts, "paragraph": paragraph_starts}
    starts = {}
    for part in SEGMENT_LEVELS:
        if part in part_dims:
            if given[part] is None:
                raise ValueError(missing.format(part=part))
            starts[part] = given[part]
    return starts


def window_distances(part_dims: Dict[str, int], counters: Dict[str, Tensor], memory: Optional[CachedWindow],
                     seq_len: int, clamp_len: int, origin: str, dtype: torch.dtype, device: torch.device,
                     table_dropout: Callable[[Tensor], Tensor], bidirectional: bool = False) -> SegmentDistances:
    """The distances of a segment's ``seq_len`` queries to the memory's keys and its own (the segment's counters
    (B, T) per part after the memory's), ``table_dropout`` applied to the tables; ``bidirectional``: keys after the
    query too (XLNet)."""
    keys = seq_len + (0 if memory is None else memory.hidden[0].size(0))
    distances = SegmentDistances(
        part_dims, keys, clamp_len, dtype, device,
        query_counters=counters,
        key_counters={p: c if memory is None else torch.cat([memory.counters[p], c], dim=1)
                      for p, c in counters.items()},
        origin=origin, num_queries=seq_len, bidirectional=bidirectional,
    )
    distances.map_tables(table_dropout)
    return distances


def window_mask(seq_len: int, num_keys: int, mem_len: int, same_length: bool, device: torch.device) -> Tensor:
    """(T, K) True where key j is hidden from query i (keys: the M = K - T
    memory positions, then the segment): the keys after the query, and with
    ``same_length`` also those ``mem_len`` or more positions back, so that
    every query sees its last mem_len positions (itself included)::

        T = 3, K = 5, mem_len = 2     causal     same_length
                                      . . . x x   x . . x x
                                      . . . . x   x x . . x
                                      . . . . .   x x x . .
    """
    query = torch.arange(seq_len, device=device)[:, None] + (num_keys - seq_len)
    key = torch.arange(num_keys, device=device)[None, :]
    mask = key > query
    if same_length:
        mask |= key <= query - mem_len
    return mask


class LayerStackOutput(NamedTuple):
    """What ``run_layer_stack`` returns."""

    hidden: Tensor  # (T, B, d) the last layer's output
    layer_inputs: List[Tensor]  # each layer's input (T, B, d): what the memory caches
    counters: Dict[str, Tensor]  # the segment's counters (B, T) per part
    attention: List[Optional[Tensor]]  # each layer's probabilities (B, H, T, K) with need_attn, else None each


def run_layer_stack(layers: Sequence[nn.Module], x: Tensor, starts: Dict[str, Tensor],
                    memory: Optional[CachedWindow], part_dims: Dict[str, int], clamp_len: int, origin: str,
                    content_bias: Tensor, position_bias: Tensor, mem_len: int, same_length: bool,
                    table_dropout: Callable[[Tensor], Tensor], need_attn: bool = False) -> LayerStackOutput:
    """The layers over one embedded segment x (T, B, d) after ``memory`` (each
    layer's cached input (M, B, d) and the counters of the cached tokens, or
    None); ``starts``: the enabled parts' start flags (B, T) (``segment_starts``);
    ``content_bias`` / ``position_bias`` (L or 1, H, dh): one u / v pair per
    layer or one for all; ``table_dropout`` is applied to the distance tables."""
    seq_len = x.size(0)
    counters = SegmentMemory.counters(starts, memory)
    distances = window_distances(part_dims, counters, memory, seq_len, clamp_len, origin, x.dtype, x.device,
                                 table_dropout)
    keys = seq_len + (0 if memory is None else memory.hidden[0].size(0))
    mask = window_mask(seq_len, keys, mem_len, same_length, x.device)
    inputs, weights = [], []
    for i, layer in enumerate(layers):
        inputs.append(x)
        bias = i if content_bias.size(0) > 1 else 0
        x, layer_weights = layer(x, None if memory is None else memory.hidden[i], distances, content_bias[bias],
                                 position_bias[bias], mask, need_attn)
        weights.append(layer_weights)
    return LayerStackOutput(x, inputs, counters, weights)
