"""Relative positions of Segatron-XL (Eq. 3) for one segment and its memory.

A query at segment position i and a key at window position j (memory first,
then the segment; K = M + T keys) are ``token`` = M + i - j tokens,
``sentence`` = s_i - s_j sentences and ``paragraph`` = p_i - p_j paragraphs
apart, where s and p are running counters of sentence and paragraph starts.
R_{i,j} is the concatenation of one sinusoid per part (Eq. 3).

Nothing of size T x K x d is built:

- token part: a table over the K distances K-1..0, shifted into place by
  ``rel_shift`` as in Transformer-XL;
- sentence / paragraph parts: the keys of a window fall into a few *runs*,
  maximal runs of consecutive keys with the same (sentence, paragraph)
  counters (about one per sentence). A query is the same number of sentences
  and paragraphs away from every key of a run, so it needs one R row per run:
  tables over the distances 0..D that occur in the window, the grid cell of
  each (query, run) pair (``run_cells``), and a one-hot (``key_runs``) that
  spreads each run's score over its keys.

    keys       k0 k1 k2 k3 k4 k5 k6      (sentence starts at k2 and k5)
    sentence    0  0  1  1  1  2  2
    run         0  0  1  1  1  2  2      -> key_runs (B, 3, 7)
    query at k6: sentence distances 2, 1, 0 to runs 0, 1, 2 -> run_cells

``origin="window_end"`` reproduces the authors' code instead of Eq. 3: the
sentence / paragraph distance of key r is counted back from the window's last
token (c_{K-1} - c_r) and then rel-shifted like the token part, so the pair
(i, j) gets c_{K-1} - c_{j+T-1-i}. That is Eq. 3 only for the last query; for
the others it involves the counters of tokens after the query, i.e. it tells
the query where the coming sentences and paragraphs start. Since it depends on
j - i only, the whole R becomes one rel-shifted table per batch row.

``bidirectional=True`` (XLNet: every query sees the memory and the whole
segment) adds the distances of keys after the query, i - j < 0: the token
table covers K-1..-(T-1) (K+T-1 rows; the rel-shift then keeps the first K
columns), the run grid's tables cover the negative sentence / paragraph
distances too, and ``window_end`` counts a backward offset e = j - i > 0 from
the window's first key (c_0 - c_e), a forward one from its last as above (our
extension: the authors' code is causal).
"""
import math
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

# the levels whose starts Segatron-XL counts, innermost first: segments.SEGMENT_LEVELS, spelled here because
# this module imports only torch and its siblings (the Hugging Face export ships it as remote code);
# tests/segments/test_segment_layout.py checks the two agree
SEGMENT_LEVELS = ("sentence", "paragraph")

ORIGINS = ("query", "window_end")

# how the attention scores R (SegmentDistances.mode)
TOKEN_ONLY = "token_only"  # no segment parts: one rel-shifted table (K, d), Transformer-XL
WINDOW_END = "window_end"  # the authors' distances: one rel-shifted table per batch row (B, K, d)
RUN_GRID = "run_grid"      # Eq. 3: a rel-shifted token table plus the (sentence x paragraph) grid of runs


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


def token_distances(num_keys: int, clamp_len: int, device: torch.device, num_after: int = 0) -> Tensor:
    """(K + num_after,) token distances K-1..-num_after: the last query's to each key, then the
    ``num_after`` keys after it (bidirectional attention); clamped to +-``clamp_len`` when > 0."""
    distances = torch.arange(num_keys - 1, -num_after - 1, -1, device=device)
    return distances.clamp(min=-clamp_len, max=clamp_len) if clamp_len > 0 else distances


def last_query_distances(key_counters: Dict[str, Tensor], num_keys: int, clamp_len: int, batch: int,
                         device: torch.device) -> Dict[str, Tensor]:
    """Distances (B, K) of the window's last query to each of its K keys, per
    part (incremental decoding): token K-1-j (clamped), and for each segment
    part c_last - c_j, ``key_counters[part]`` (B, K) holding c_j with the
    query's own counter last. For the last query Eq. 3 and the authors'
    ``window_end`` distances agree."""
    distances = {"token": token_distances(num_keys, clamp_len, device).expand(batch, -1)}
    for part, counter in key_counters.items():
        distances[part] = counter[:, -1:] - counter
    return distances


def distance_sinusoids(size: int, dim: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(size, dim) sinusoids of the distances 0..size-1, from float32 angles."""
    angle_dtype = torch.promote_types(dtype, torch.float32)
    return sinusoid_table(torch.arange(size, device=device, dtype=angle_dtype), dim).to(dtype)


class SegmentDistances:
    """Position inputs shared by all layers for one forward pass (K keys, T queries, B rows).

    Attributes:
      mode: TOKEN_ONLY, WINDOW_END or RUN_GRID (see above), fixed by the
        enabled parts and the origin
      position_table: rows of R for the rel-shift, row r for token distance
        K-1-r (clamped to clamp_len): (K, d_token), or (K+T-1, d_token) when
        bidirectional; in WINDOW_END mode the whole R per batch row, (B, K, d)
        or (B, K+T-1, d), its segment parts for distances c_{K-1} - c_r (and
        c_0 - c_{r-K+1} for the rows r >= K of negative offsets)
      tables[part]: (D_part+1, d_part) sentence / paragraph sinusoids, row n for
        distance n (RUN_GRID only; empty otherwise); when bidirectional, rows
        for the distances lo..hi that occur, row n for distance lo + n
      run_cells: (B, T, S) long, for each query and run of keys the flat
        position of their (sentence, paragraph) distances in the grid of all
        combinations (row-major over ``tables``); runs after the query, which
        are masked, get distance 0 unless bidirectional (RUN_GRID only)
      bidirectional: keys after the query are attended (XLNet)
      key_runs: (B, S, K) one-hot in the model's dtype, 1 where key j is in
        run g (a batch row with fewer than S runs has empty rows; RUN_GRID only)
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
        num_queries: int = 0,
        bidirectional: bool = False,
    ):
        """``num_queries`` (T) is needed only when ``bidirectional``."""
        if origin not in ORIGINS:
            raise ValueError(f"unknown segment distance origin {origin!r}; choose from {ORIGINS}")
        # sinusoids of distances in the hundreds need float32 angles even when the model runs in fp16
        self.dtype, self.angle_dtype, self.device = dtype, torch.promote_types(dtype, torch.float32), device
        self.bidirectional = bidirectional
        self.num_after = num_queries - 1 if bidirectional else 0
        self.position_table = self._token_table(num_keys, clamp_len, part_dims["token"])
        self.tables: Dict[str, Tensor] = {}
        self.run_cells: Optional[Tensor] = None
        self.key_runs: Optional[Tensor] = None
        parts = [part for part in SEGMENT_LEVELS if part in part_dims]
        if not parts:
            self.mode = TOKEN_ONLY
        elif origin == "window_end":
            self.mode = WINDOW_END
            self.position_table = self._window_end_table(key_counters, {p: part_dims[p] for p in parts}, clamp_len)
        else:
            self.mode = RUN_GRID
            self._run_grid(query_counters, key_counters, {p: part_dims[p] for p in parts})

    def _sinusoids(self, distances: Tensor, dim: int) -> Tensor:
        return sinusoid_table(distances.to(self.angle_dtype), dim).to(self.dtype)

    def _token_table(self, num_keys: int, clamp_len: int, dim: int) -> Tensor:
        """(K + num_after, d_token): row r for token distance K-1-r."""
        return self._sinusoids(token_distances(num_keys, clamp_len, self.device, self.num_after), dim)

    def _window_end_table(self, key_counters: Dict[str, Tensor], part_dims: Dict[str, int],
                          clamp_len: int) -> Tensor:
        """(B, K, d): the token rows, then each part for c_{K-1} - c_r; like the
        token distances, these are clamped to ``clamp_len`` when > 0 (as the
        authors' code clamps all three)."""
        batch = next(iter(key_counters.values())).size(0)
        tables = [self.position_table.expand(batch, -1, -1)]
        for part, dim in part_dims.items():
            counter = key_counters[part]  # (B, K)
            distance = counter[:, -1:] - counter
            if self.num_after:  # offsets -1..-(T-1): counted from the first key
                distance = torch.cat([distance, counter[:, :1] - counter[:, 1:self.num_after + 1]], dim=1)
            if clamp_len > 0:
                distance = distance.clamp(min=-clamp_len, max=clamp_len)
            tables.append(self._sinusoids(distance.flatten(), dim).view(*distance.shape, -1))
        return torch.cat(tables, dim=-1)

    def _run_grid(self, query_counters: Dict[str, Tensor], key_counters: Dict[str, Tensor],
                  part_dims: Dict[str, int]) -> None:
        """``key_runs``, ``tables`` and ``run_cells`` of Eq. 3."""
        parts = list(part_dims)
        # a new run wherever any counter changes from one key to the next
        changed = torch.stack([key_counters[part].diff(dim=1) != 0 for part in parts]).any(dim=0)
        run = F.pad(changed.long().cumsum(dim=1), (1, 0))  # (B, K), non-decreasing from 0
        # sizes in one host sync: the runs, each part's largest distance (last query, first key) and,
        # when bidirectional, its smallest (first query, last key)
        smallest = [(query_counters[p][:, 0] - key_counters[p][:, -1]).min() for p in parts] if self.bidirectional \
            else []
        last_run, *extremes = torch.stack(
            [run[:, -1].max()] + [(query_counters[p][:, -1] - key_counters[p][:, 0]).max() for p in parts]
            + smallest
        ).tolist()
        lows = extremes[len(parts):] or [0] * len(parts)
        num_runs = last_run + 1
        self.key_runs = F.one_hot(run, num_runs).transpose(1, 2).to(self.dtype)
        for part, part_largest, low in zip(parts, extremes, lows):
            counter = key_counters[part]
            # padding runs of rows with fewer runs take the row's last counter
            run_counter = counter[:, -1:].expand(-1, num_runs).scatter(1, run, counter)
            distance = query_counters[part][:, :, None] - run_counter[:, None, :]
            if self.bidirectional:
                low = min(low, 0)
                distance = distance - low  # row of the table
                size = max(part_largest, 0) - low + 1
            else:
                distance = distance.clamp(min=0)
                size = max(part_largest, 0) + 1
            self.tables[part] = self._sinusoids(torch.arange(low, low + size, device=self.device), part_dims[part])
            self.run_cells = distance if self.run_cells is None else self.run_cells * size + distance

    def map_tables(self, fn) -> None:
        """Apply ``fn`` (e.g. dropout) to every table."""
        self.position_table = fn(self.position_table)
        self.tables = {part: fn(table) for part, table in self.tables.items()}
