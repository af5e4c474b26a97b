"""Relative positions of Segatron-XL (Eq. 3) for one segment and its memory.

A query at segment position i and a key at window position j (memory first,
then the segment; K = M + T keys) are ``token`` = M + i - j tokens,
``sentence`` = s_i - s_j sentences and ``paragraph`` = p_i - p_j paragraphs
apart, where s and p are running counters of sentence and paragraph starts.
R_{i,j} is the concatenation of one sinusoid per part (Eq. 3).

Nothing of size T x K x d is built:

- token part: a table over the K distances K-1..0, shifted into place by
  ``rel_shift`` as in Transformer-XL;
- sentence / paragraph parts: the keys of a window fall into a few *key
  states*, runs of keys with the same (sentence, paragraph) counters (about one
  per sentence). A query is the same number of sentences and paragraphs away
  from every key of a state, so it needs one R row per state: tables over the
  distances 0..D that occur in the window, the grid cell of each (query, state)
  pair (``state_cells``), and a one-hot (``key_states``) that spreads each
  state's score over its keys.

``origin="window_end"`` reproduces the authors' code instead of Eq. 3: the
sentence / paragraph distance of key r is counted back from the window's last
token (c_{K-1} - c_r) and then rel-shifted like the token part, so the pair
(i, j) gets c_{K-1} - c_{j+T-1-i}. That is Eq. 3 only for the last query; for
the others it involves the counters of tokens after the query, i.e. it tells
the query where the coming sentences and paragraphs start. Since it depends on
j - i only, the whole R becomes one rel-shifted table per batch row.
"""
import math
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

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
    """Position inputs shared by all layers for one forward pass (K keys, T queries, B rows).

    Attributes:
      position_table: R rows for the rel-shift, row r for token distance K-1-r
        (clamped to clamp_len): (K, d_token); with ``window_end``, the whole R
        per batch row, (B, K, d), its segment parts for distances c_{K-1} - c_r
      tables[part]: (D_part+1, d_part) sentence / paragraph sinusoids, row n for
        distance n (``query`` origin only; empty otherwise)
      state_cells: (B, T, S) long, for each query and key state the flat
        position of their (sentence, paragraph) distances in the grid of all
        combinations (row-major over ``tables``); states after the query,
        which are masked, get distance 0
      key_states: (B, S, K) one-hot in the model's dtype, 1 where key j is in
        state g (a batch row with fewer than S states has empty rows)
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
        if origin not in ORIGINS:
            raise ValueError(f"unknown segment distance origin {origin!r}; choose from {ORIGINS}")
        # sinusoids of distances in the hundreds need float32 angles even when the model runs in fp16
        angle_dtype = torch.promote_types(dtype, torch.float32)
        positions = torch.arange(num_keys - 1, -1, -1, device=device, dtype=angle_dtype)
        if clamp_len > 0:
            positions = positions.clamp(max=clamp_len)
        self.position_table = sinusoid_table(positions, part_dims["token"]).to(dtype)
        self.tables: Dict[str, Tensor] = {}
        self.state_cells: Optional[Tensor] = None
        self.key_states: Optional[Tensor] = None
        parts = [part for part in PARTS[1:] if part in part_dims]
        if not parts:
            return
        if origin == "window_end":
            tables = []
            for part in parts:
                counter = key_counters[part]  # (B, K)
                distance = (counter[:, -1:] - counter).to(angle_dtype)
                tables.append(sinusoid_table(distance.flatten(), part_dims[part]).view(*distance.shape, -1))
            token_rows = self.position_table.expand(key_counters[parts[0]].size(0), -1, -1)
            self.position_table = torch.cat([token_rows] + [t.to(dtype) for t in tables], dim=-1)
            return

        # key states: a new one wherever any counter changes from one key to the next
        changed = torch.stack([key_counters[part].diff(dim=1) != 0 for part in parts]).any(dim=0)
        state = F.pad(changed.long().cumsum(dim=1), (1, 0))  # (B, K), non-decreasing from 0
        # sizes in one host sync: the states, and each part's largest distance (last query, first key)
        last_state, *largest = torch.stack(
            [state[:, -1].max()] + [(query_counters[p][:, -1] - key_counters[p][:, 0]).max() for p in parts]
        ).tolist()
        num_states = last_state + 1
        self.key_states = F.one_hot(state, num_states).transpose(1, 2).to(dtype)
        for part, part_largest in zip(parts, largest):
            counter = key_counters[part]
            # padding states of rows with fewer states take the row's last counter
            state_counter = counter[:, -1:].expand(-1, num_states).scatter(1, state, counter)
            distance = (query_counters[part][:, :, None] - state_counter[:, None, :]).clamp(min=0)
            size = max(part_largest, 0) + 1
            self.tables[part] = sinusoid_table(torch.arange(size, device=device, dtype=angle_dtype),
                                               part_dims[part]).to(dtype)
            self.state_cells = distance if self.state_cells is None else self.state_cells * size + distance

    def map_tables(self, fn) -> None:
        """Apply ``fn`` (e.g. dropout) to every table."""
        self.position_table = fn(self.position_table)
        self.tables = {part: fn(table) for part, table in self.tables.items()}
