"""Relative distances of Segatron-XL (Eq. 3) for one segment and its memory.

A query at segment position i and a key at window position j (memory first,
then the segment; K = M + T keys) are ``token`` = M + i - j tokens,
``sentence`` = s_i - s_j sentences and ``paragraph`` = p_i - p_j paragraphs
apart, where s and p are running counters of sentence and paragraph starts.
R_{i,j} is the concatenation of one sinusoid per part (Eq. 3).

Nothing of size T x K x d is built: the token part is a table over the K
distances K-1..0 (shifted into place by ``rel_shift``); the sentence and
paragraph parts are tables over the few distances 0..D that occur in the
window, with a (B, T, K) index of which row each query/key pair uses.

``origin="window_end"`` reproduces the authors' code instead of Eq. 3: the
sentence / paragraph distance of key r is counted back from the window's last
token (c_{K-1} - c_r) and then rel-shifted like the token part, so the pair
(i, j) gets c_{K-1} - c_{j+T-1-i}. That is Eq. 3 only for the last query; for
the others it involves the counters of tokens after the query, i.e. it tells
the query where the coming sentences and paragraphs start.
"""
import math
from typing import Dict, Optional

import torch
from torch import Tensor

from .descending_gather import run_bounds

PARTS = ("token", "sentence", "paragraph")
ORIGINS = ("query", "window_end")


def segment_part_dims(embed_dim: int, sentence: bool, paragraph: bool) -> Dict[str, int]:
    """Widths of the enabled parts of R; they always sum to ``embed_dim``.

    Every part but the last is ``embed_dim // parts`` rounded up to even, the
    last takes the rest (410 -> 136/136/138 with all three parts)."""
    parts = ["token"] + (["sentence"] if sentence else []) + (["paragraph"] if paragraph else [])
    share = embed_dim // len(parts)
    share += share % 2
    dims = {name: share for name in parts[:-1]}
    dims[parts[-1]] = embed_dim - share * (len(parts) - 1)
    if any(d <= 0 or d % 2 for d in dims.values()):
        raise ValueError(f"cannot split embed_dim={embed_dim} into even sinusoid parts {parts}")
    return dims


def sinusoid_table(distances: Tensor, dim: int) -> Tensor:
    """(n,) float distances -> (n, dim) table [sin(d * f), cos(d * f)],
    with frequencies f_k = 10000^(-2k/dim) as in Transformer-XL."""
    inv_freq = torch.exp(
        torch.arange(0, dim, 2, device=distances.device, dtype=distances.dtype) * (-math.log(10000.0) / dim)
    )
    angles = distances[:, None] * inv_freq[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class SegmentDistances:
    """Distance tables shared by all layers for one forward pass.

    Attributes (K = keys, T = queries, B = batch):
      token_table: (K, d_token), row r for distance K-1-r (clamped to clamp_len)
      tables[part]: (D_part+1, d_part) for the sentence / paragraph part, row k
        for distance k
      joint_index: (B, T, K) long, for each pair the flat position of its
        (sentence, paragraph) distances in the grid of all combinations
        (row-major over ``tables``; distances of keys after the query, which
        are masked, are 0). One gather over that grid serves every part.
      joint_runs: ``run_bounds`` of joint_index, for ``descending_gather``
    """

    def __init__(
        self,
        part_dims: Dict[str, int],
        num_keys: int,
        clamp_len: int,
        dtype: torch.dtype,
        device: torch.device,
        query_counters: Optional[Dict[str, Tensor]] = None,
        key_counters: Optional[Dict[str, Tensor]] = None,
        origin: str = "query",
    ):
        # sinusoids of distances in the hundreds need float32 angles even when the model runs in fp16
        table_dtype = torch.promote_types(dtype, torch.float32)
        positions = torch.arange(num_keys - 1, -1, -1, device=device, dtype=table_dtype)
        if clamp_len > 0:
            positions = positions.clamp(max=clamp_len)
        self.token_table = sinusoid_table(positions, part_dims["token"]).to(dtype)
        self.tables: Dict[str, Tensor] = {}
        self.joint_index: Optional[Tensor] = None
        for part in PARTS[1:]:
            if part not in part_dims:
                continue
            distance = self._distance(query_counters[part], key_counters[part], origin).clamp(min=0)
            largest = int(distance.max()) if distance.numel() else 0
            self.tables[part] = sinusoid_table(torch.arange(largest + 1, device=device, dtype=table_dtype),
                                               part_dims[part]).to(dtype)
            if self.joint_index is None:
                self.joint_index = distance
            else:
                self.joint_index = self.joint_index * (largest + 1) + distance
        # distances never grow from one key to the next, so neither does joint_index
        self.joint_runs = None if self.joint_index is None else run_bounds(
            self.joint_index, math.prod(table.size(0) for table in self.tables.values()))

    @staticmethod
    def _distance(query_counter: Tensor, key_counter: Tensor, origin: str) -> Tensor:
        """(B, T) and (B, K) counters -> (B, T, K) counter distances."""
        if origin == "query":
            return query_counter[:, :, None] - key_counter[:, None, :]
        if origin == "window_end":
            queries, keys = query_counter.size(1), key_counter.size(1)
            shifted = (torch.arange(keys, device=key_counter.device)[None, :]
                       + torch.arange(queries - 1, -1, -1, device=key_counter.device)[:, None]).clamp(max=keys - 1)
            return key_counter[:, -1:, None] - key_counter[:, shifted]
        raise ValueError(f"unknown segment distance origin {origin!r}; choose from {ORIGINS}")

    def map_tables(self, fn) -> None:
        """Apply ``fn`` (e.g. dropout) to every table."""
        self.token_table = fn(self.token_table)
        self.tables = {part: fn(table) for part, table in self.tables.items()}
