"""The state of a Segatron-XL decoder's incremental decoding
(``SegatronXLDecoder.start_decoding``, ``prime_decoding``, ``decode_step``):
``DecodingCache``, every layer's keys and values, so that a new token costs
one query against the window instead of a forward over it; and
``GenerationSetup``, what fairseq's ``SequenceGenerator`` needs besides
(``SegatronLMTask.build_generator``).
"""
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import Tensor

from segatron_fairseq.modules import SegmentRelativeMultiheadAttention, distance_sinusoids


@dataclass
class GenerationSetup:
    """What a Segatron-XL decoder needs to serve fairseq's ``SequenceGenerator``
    (set by ``SegatronLMTask.build_generator``): ``max_keys``, the longest
    window a query sees (training memory + segment length; the oldest keys
    are dropped beyond it), and ``new_indexer``, which makes the per-row
    object whose ``push(token)`` gives each arriving token's (sentence start,
    paragraph start) (``GenerationIndexer``; None without segment parts)."""

    max_keys: int
    new_indexer: Optional[Callable[[], object]] = None


class DecodingCache:
    """Incremental decoding state of a batch: every layer's keys and values
    (B, H, K, dh) for the K positions of the window (the memory or prompt,
    then the decoded ones), their segment counters (B, K), and the last
    counter (B,) per part; per layer, the projected sinusoids W_part R_part
    of each part's distances 0..n_part-1 (``table_sizes``), the parts' blocks
    side by side (H, dh, N), grown on demand.

    New keys and values are written in place into a buffer per layer (keys
    and values, (2, B, H, capacity, dh)); ``keys`` / ``values`` are views of
    it. The buffer doubles when full, and the window moves to its front then,
    so a step copies nothing else.
    """

    def __init__(self, keys: List[Optional[Tensor]], values: List[Optional[Tensor]], counters: Dict[str, Tensor],
                 last: Dict[str, Tensor]):
        self.keys, self.values = list(keys), list(values)
        self.counters, self.last = counters, last
        self.table_sizes: Dict[str, int] = {}
        self.position_tables: List[Optional[Tensor]] = [None] * len(self.keys)
        self._buffers: List[Optional[Tensor]] = [None] * len(self.keys)
        self._starts = [0] * len(self.keys)

    @property
    def length(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].size(2)

    def keep_last(self, positions: int) -> None:
        """Drop the oldest positions beyond the last ``positions``."""
        drop = self.length - positions
        if drop > 0:
            self.keys = [k[:, :, drop:] for k in self.keys]
            self.values = [v[:, :, drop:] for v in self.values]
            self._starts = [start + drop for start in self._starts]
            self.counters = {p: c[:, drop:] for p, c in self.counters.items()}

    def append(self, layer: int, key: Tensor, value: Tensor) -> Tuple[Tensor, Tensor]:
        """Store one new position's key and value (B, H, 1, dh) of ``layer``
        after the window's; returns the window's keys and values (B, H, K, dh)."""
        keys = self.keys[layer]
        length = 0 if keys is None else keys.size(2)
        buffer, start = self._buffers[layer], self._starts[layer]
        if buffer is None or start + length >= buffer.size(3):
            buffer = key.new_empty(2, key.size(0), key.size(1), max(64, 2 * (length + 1)), key.size(3))
            if length:
                buffer[0, :, :, :length], buffer[1, :, :, :length] = keys, self.values[layer]
            self._buffers[layer], self._starts[layer], start = buffer, 0, 0
        buffer[0, :, :, start + length], buffer[1, :, :, start + length] = key[:, :, 0], value[:, :, 0]
        self.keys[layer] = buffer[0, :, :, start:start + length + 1]
        self.values[layer] = buffer[1, :, :, start:start + length + 1]
        return self.keys[layer], self.values[layer]

    def reorder(self, new_order: Tensor) -> None:
        """Row i becomes row ``new_order[i]`` (beam search)."""
        self.keys = [k.index_select(0, new_order) for k in self.keys]
        self.values = [v.index_select(0, new_order) for v in self.values]
        self.counters = {p: c.index_select(0, new_order) for p, c in self.counters.items()}
        self.last = {p: c.index_select(0, new_order) for p, c in self.last.items()}
        self._buffers = [None] * len(self.keys)

    def position_index(self, distances: Dict[str, Tensor]) -> Tensor:
        """(B, P, K): each part's distances (B, K) as columns of the layers'
        position tables (the part's block offset added). A part whose largest
        distance is beyond its block doubles it, and the tables are rebuilt."""
        for part, distance in distances.items():
            needed = int(distance.max()) + 1
            if self.table_sizes.get(part, 0) < needed:
                self.table_sizes[part] = max(needed, 2 * self.table_sizes.get(part, 32))
                self.position_tables = [None] * len(self.keys)
        columns, offset = [], 0
        for part, size in self.table_sizes.items():  # the order of the tables' blocks
            columns.append(distances[part] + offset)
            offset += size
        return torch.stack(columns, dim=1)

    def position_table(self, layer: int, attention: SegmentRelativeMultiheadAttention, part_dims: Dict[str, int],
                       dtype: torch.dtype, device: torch.device) -> Tensor:
        """(H, dh, N) W_part R_part of ``layer``'s ``attention`` for every part's
        distances, blocks in part order, built once per size."""
        if self.position_tables[layer] is None:
            blocks = [attention.projected_rows(distance_sinusoids(size, part_dims[part], dtype, device), part)
                      for part, size in self.table_sizes.items()]  # (n, H, dh) each
            self.position_tables[layer] = torch.cat(blocks, dim=0).permute(1, 2, 0).contiguous()
        return self.position_tables[layer]
