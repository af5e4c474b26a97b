"""Relative multi-head attention with a segment-aware R (Segatron Eq. 1-3).

For query i and key j, with head vectors q_i, k_j and content/position biases
u, v (Eq. 1, Transformer-XL's decomposition):

    score(i, j) = (q_i + u) . k_j  +  (q_i + v) . W_R R_{i,j}

R_{i,j} = [R^token_{t_i-t_j}; R^sentence_{s_i-s_j}; R^paragraph_{p_i-p_j}]
(Eq. 3), so W_R R_{i,j} splits into one product per part, each with its own
column block of W_R:

- token: the usual Transformer-XL term: (q_i + v) . W_tok R^token over the K
  distances, then ``rel_shift`` puts distance M + i - j at column j;
- sentence, paragraph: W_s R^s_a + W_p R^p_b for every combination (a, b) of
  the distances present in the window form a small grid of G rows, scored
  against (q_i + v) in the same product as the token rows. A gather picks,
  for each query, the cell of each of the window's S runs (runs of keys with
  the same counters), and a product with the one-hot of the keys' runs
  (B, S, K) spreads it over the keys, added to the scores in the same kernel.
  Cost O(T x (G + S) x d + T x K x S) instead of O(T x K x d), and no T x K
  gather or scatter (the product's backward sums each run's keys).

In Transformer-XL's names the first term is AC, its terms (a) q_i . k_j and
(c) u . k_j, and the second BD, its terms (b) q_i . W_R R_{i,j} and (d)
v . W_R R_{i,j}; here BD is BD_token plus BD_grid. The distance mode
(``SegmentDistances.mode``) says which terms there are: TOKEN_ONLY and
WINDOW_END (the authors' distances, which depend on j - i only: one
rel-shifted table per batch row carries all three parts) have AC + BD_token;
RUN_GRID (Eq. 3) has AC + BD_token + BD_grid.

XLNet's two-stream attention (``xlnet_attention.py``) uses the same scores
with bidirectional distances (``SegmentDistances(bidirectional=True)``: the
rel-shifted table has K+T-1 rows and the first K columns are kept).
"""
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .segment_distances import RUN_GRID, SegmentDistances


def rel_shift(x: Tensor) -> Tensor:
    """(B, H, T, K) scores against R rows for distances K-1..0 -> scores whose
    column j holds distance K - T + i - j (valid for j <= K - T + i).

    T = K = 3 (no memory); a cell "d" is the score for distance d:

        x (row i, column r = distance 2-r)    rel_shift(x)
        [2 1 0]                               [0 . .]
        [2 1 0]                               [1 0 .]
        [2 1 0]                               [2 1 0]

    Query i sees key j at distance i - j; the cells marked "." (j > i) hold
    leftovers of other rows and are masked by the caller. It works by padding
    one zero column in front, viewing the (T, K+1) block as (K+1, T), dropping
    the first row and viewing the rest as (T, K): each row moves left by
    T-1-i places, without any gather.
    """
    batch, heads, queries, keys = x.shape
    padded = torch.cat([x.new_zeros(batch, heads, queries, 1), x], dim=-1)
    return padded.view(batch, heads, keys + 1, queries)[:, :, 1:].reshape(batch, heads, queries, keys)


def position_product(query: Tensor, rows: Tensor) -> Tensor:
    """Queries (B, H, T, dh) against projected R rows (n, H, dh), or rows per batch row (B, n, H, dh):
    (B, H, T, n), as one batched product over the B x H pairs whose output is already in the scores'
    layout (an einsum would permute it, and its gradient back, through a slow copy)."""
    batch, heads, seq_len, head_dim = query.shape
    if rows.dim() == 3:
        rows = rows.unsqueeze(0).expand(batch, -1, -1, -1)
    right = rows.permute(0, 2, 3, 1).contiguous().view(batch * heads, head_dim, rows.size(1))
    return torch.bmm(query.reshape(batch * heads, seq_len, head_dim), right).view(batch, heads, seq_len, -1)


class SegmentRelativeMultiheadAttention(nn.Module):
    """Scores, softmax and values of Eq. 1 over a window (memory, then the
    segment); the residual connection and LayerNorm belong to the layer.

    Entry points: ``forward`` (a segment after its memory), ``scores`` (its raw
    scores), and for incremental decoding ``project``, ``projected_rows`` and
    ``step``. XLNet's ``TwoStreamRelativeAttention`` (``xlnet_attention.py``)
    builds on the same parts: ``project``, ``position_rows``,
    ``_content_scores`` (AC), ``_add_position_scores`` (BD) and ``_attend``."""

    def __init__(self, embed_dim: int, num_heads: int, head_dim: int, part_dims: Dict[str, int],
                 attention_dropout: float):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.part_dims = dict(part_dims)
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(embed_dim, 3 * num_heads * head_dim, bias=False)
        # W_R: one matrix over the concatenated R; its column blocks act on the parts
        self.r_proj = nn.Linear(sum(part_dims.values()), num_heads * head_dim, bias=False)
        self.out_proj = nn.Linear(num_heads * head_dim, embed_dim, bias=False)
        self.attention_dropout = nn.Dropout(attention_dropout)

    def forward(self, hidden: Tensor, memory: Optional[Tensor], distances: SegmentDistances,
                content_bias: Tensor, position_bias: Tensor, mask: Tensor,
                need_weights: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """hidden (T, B, d), memory (M, B, d) or None, mask (T, K) True where
        the key is hidden from the query -> the attention's output (T, B, d),
        after the output projection (no residual, no norm), and with
        ``need_weights`` the attention probabilities (B, H, T, K), float32,
        before dropout (else None)."""
        scores, v = self.scores(hidden, memory, distances, content_bias, position_bias)
        return self._attend(scores, v, mask[None, None], need_weights)

    def scores(self, hidden: Tensor, memory: Optional[Tensor], distances: SegmentDistances,
               content_bias: Tensor, position_bias: Tensor) -> Tuple[Tensor, Tensor]:
        """Raw scores AC + BD (B, H, T, K) before scaling and masking, and values (B, H, K, dh)."""
        q, k, v = self.project(hidden, memory)
        ac = self._content_scores(q, k, content_bias)
        return self._add_position_scores(ac, q, distances, self.position_rows(distances), position_bias), v

    def project(self, hidden: Tensor, memory: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        """Queries (B, H, T, dh) of the segment hidden (T, B, d); keys and values (B, H, K, dh) of the
        window [memory; segment] (K = M + T)."""
        seq_len, batch, _ = hidden.shape
        window = hidden if memory is None else torch.cat([memory, hidden], dim=0)
        q, k, v = self.qkv(window).chunk(3, dim=-1)
        keys = window.size(0)
        q = q[-seq_len:].view(seq_len, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        k = k.view(keys, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        v = v.view(keys, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        return q, k, v

    def position_rows(self, distances: SegmentDistances) -> Tensor:
        """W_R R of ``distances``: the token table's rows (n, H, dh), or (B, n, H, dh) per batch row in
        WINDOW_END mode; in RUN_GRID mode followed by the G cells of the (sentence x paragraph) grid."""
        r_rows = self._project_columns(distances.position_table, 0)  # (K, H, dh), or (B, K, H, dh)
        if distances.mode != RUN_GRID:
            return r_rows
        # W_R R for every cell of the (sentence x paragraph) grid, G = product of the table sizes
        start, r_grid = self.part_dims["token"], None
        for table in distances.tables.values():
            r_part = self._project_columns(table, start)  # (D+1, H, dh)
            r_grid = r_part if r_grid is None else (r_grid[:, None] + r_part[None, :]).flatten(0, 1)
            start += table.size(-1)
        return torch.cat([r_rows, r_grid], dim=0)

    def projected_rows(self, table: Tensor, part: str) -> Tensor:
        """W_part R_part for a (n, d_part) table of one part's sinusoids: (n, H, dh)."""
        start = 0
        for name, width in self.part_dims.items():
            if name == part:
                return self._project_columns(table, start)
            start += width
        raise KeyError(part)

    def _project_columns(self, table: Tensor, start: int) -> Tensor:
        """(..., d_part) rows of R's parts through W_R's columns from ``start`` on -> (..., H, dh)."""
        weight = self.r_proj.weight[:, start:start + table.size(-1)]
        return F.linear(table, weight).view(*table.shape[:-1], self.num_heads, self.head_dim)

    def _content_scores(self, q: Tensor, k: Tensor, content_bias: Tensor) -> Tensor:
        """AC (B, H, T, K) = (q_i + u) . k_j: Transformer-XL's terms (a) + (c), of queries q (B, H, T, dh)
        and keys k (B, H, K, dh)."""
        return torch.matmul(q + content_bias[None, :, None, :], k.transpose(-1, -2))

    def _add_position_scores(self, ac: Tensor, q: Tensor, distances: SegmentDistances, rows: Tensor,
                             position_bias: Tensor) -> Tensor:
        """AC + BD (B, H, T, K): BD = (q_i + v) . W_R R_{i,j}, Transformer-XL's terms (b) + (d), with the
        rows ``rows`` of ``position_rows(distances)``: BD_token, plus BD_grid in RUN_GRID mode (Eq. 3)."""
        q_position = q + position_bias[None, :, None, :]  # q_i + v
        if distances.mode == RUN_GRID:
            return self._add_run_grid_terms(ac, q_position, distances, rows)
        # BD_token (B, H, T, K): (q_i + v) . W_R R for the K distances, rel-shifted into place;
        # in WINDOW_END mode R carries all three parts and differs per batch row
        return ac + _keys_of(rel_shift(position_product(q_position, rows)), distances, ac.size(-1))

    def _add_run_grid_terms(self, ac: Tensor, q_position: Tensor, distances: SegmentDistances,
                            rows: Tensor) -> Tensor:
        """AC + BD_token + BD_grid (B, H, T, K) of Eq. 3; ``rows``: the token rows, then the grid's cells."""
        batch, heads, seq_len, keys = ac.shape
        token_rows = distances.position_table.size(0)
        # token rows and grid cells scored in one product: a separate product over the grid's few
        # rows runs on slow narrow kernels
        by_row = position_product(q_position, rows)  # (B, H, T, K + G)
        # split, not two slices: its backward is one concatenation, not two zero-filled full-size gradients
        by_token, by_cell = by_row.split([token_rows, rows.size(0) - token_rows], dim=-1)  # (., K or K+T-1), (., G)
        cells = distances.run_cells  # (B, T, S)
        by_run = by_cell.gather(-1, cells[:, None].expand(batch, heads, *cells.shape[1:]))  # (B, H, T, S)
        # BD_grid (B, H, T, K) = by_run @ key_runs, added to AC in the same kernel
        scores = torch.baddbmm(ac.flatten(1, 2), by_run.flatten(1, 2), distances.key_runs)
        return scores.view(batch, heads, seq_len, keys) + _keys_of(rel_shift(by_token), distances, keys)  # + BD_token

    def step(self, query: Tensor, keys: Tensor, values: Tensor, position_table: Tensor, position_index: Tensor,
             content_bias: Tensor, position_bias: Tensor) -> Tensor:
        """Attention of one new position at the end of the window (incremental
        decoding): query (B, H, 1, dh); keys / values (B, H, K, dh) of the K
        positions of the window, the new one last; position_table (H, dh, N):
        W_part R_part of each part's distances 0..n_part-1, the parts' blocks
        side by side; position_index (B, P, K): for each of the P parts, the
        column of the query's distance to each key. Returns the output (B, d).
        No rel-shift (the query is the last). AC (B, H, 1, K) is the query's
        dot product with the keys; BD is its dot product with every column
        (B, H, 1, N), picked at each key's column in each part and summed over
        the parts: O(K d + N d) for the new token.
        """
        batch, parts, num_keys = position_index.shape
        scores = torch.matmul(query + content_bias[:, None], keys.transpose(2, 3))  # AC (B, H, 1, K)
        by_column = torch.matmul(query + position_bias[:, None], position_table)  # (B, H, 1, N)
        index = position_index.view(batch, 1, 1, parts * num_keys).expand(-1, self.num_heads, -1, -1)
        bd = by_column.gather(3, index).view(batch, self.num_heads, 1, parts, num_keys).sum(dim=3)  # BD
        probs = torch.softmax(((scores + bd) * self.scale).float(), dim=-1).type_as(values)
        attended = torch.matmul(probs, values)  # (B, H, 1, dh)
        return self.out_proj(attended.reshape(batch, self.num_heads * self.head_dim))

    def _attend(self, scores: Tensor, v: Tensor, mask: Tensor, need_weights: bool,
                hidden_score: float = float("-inf")) -> Tuple[Tensor, Optional[Tensor]]:
        """Softmax of the scaled scores, ``hidden_score`` where ``mask`` (broadcast to (B, H, T, K)) is
        True, values, output projection: (T, B, d) and the probabilities (B, H, T, K) or None."""
        attended, weights = self._attend_heads(scores, v, mask, need_weights, hidden_score)
        batch, _, seq_len, _ = attended.shape
        attended = attended.permute(2, 0, 1, 3).reshape(seq_len, batch, self.num_heads * self.head_dim)
        return self.out_proj(attended), weights

    def _attend_heads(self, scores: Tensor, v: Tensor, mask: Tensor, need_weights: bool,
                      hidden_score: float) -> Tuple[Tensor, Optional[Tensor]]:
        """``_attend`` before the output projection: the heads' outputs (B, H, T, dh) and the probabilities."""
        scores = (scores * self.scale).float().masked_fill(mask, hidden_score)
        weights = torch.softmax(scores, dim=-1)
        probs = self.attention_dropout(weights.type_as(v))
        return torch.matmul(probs, v), (weights.detach() if need_weights else None)


def _keys_of(shifted: Tensor, distances: SegmentDistances, keys: int) -> Tensor:
    """The K key columns of rel-shifted scores: all of them, or with bidirectional distances (K+T-1
    columns) the first K."""
    return shifted[..., :keys] if distances.bidirectional else shifted
