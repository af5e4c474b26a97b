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
  for each query, the cell of each of the window's S key states (runs of keys
  with the same counters), and a product with the one-hot of the keys' states
  (B, S, K) spreads it over the keys, added to the scores in the same kernel.
  Cost O(T x (G + S) x d + T x K x S) instead of O(T x K x d), and no T x K
  gather or scatter (the product's backward sums each state's keys).

With the authors' ``window_end`` distances, R depends on j - i only: one
rel-shifted table per batch row carries all three parts.
"""
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .segment_distances import SegmentDistances


def rel_shift(x: Tensor) -> Tensor:
    """(B, H, T, K) scores against R rows for distances K-1..0 -> scores whose
    column j holds distance K - T + i - j (valid for j <= K - T + i)."""
    batch, heads, queries, keys = x.shape
    padded = torch.cat([x.new_zeros(batch, heads, queries, 1), x], dim=-1)
    return padded.view(batch, heads, keys + 1, queries)[:, :, 1:].reshape(batch, heads, queries, keys)


class SegmentRelativeMultiheadAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, head_dim: int, part_dims: Dict[str, int],
                 attention_dropout: float, pre_norm: bool):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.part_dims = dict(part_dims)
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(embed_dim, 3 * num_heads * head_dim, bias=False)
        # W_R: one matrix over the concatenated R; its column blocks act on the parts
        self.r_proj = nn.Linear(sum(part_dims.values()), num_heads * head_dim, bias=False)
        self.out_proj = nn.Linear(num_heads * head_dim, embed_dim, bias=False)
        self.attention_dropout = nn.Dropout(attention_dropout)
        self.layer_norm = nn.LayerNorm(embed_dim)
        self.pre_norm = pre_norm

    def _project(self, table: Tensor, start: int) -> Tensor:
        """(..., d_part) rows of R's parts from column ``start`` on -> (..., H, head_dim)."""
        weight = self.r_proj.weight[:, start:start + table.size(-1)]
        return F.linear(table, weight).view(*table.shape[:-1], self.num_heads, self.head_dim)

    def scores(self, hidden: Tensor, memory: Optional[Tensor], distances: SegmentDistances,
               content_bias: Tensor, position_bias: Tensor):
        """Raw scores (B, H, T, K) before scaling and masking, and values (B, H, K, head_dim)."""
        seq_len, batch, _ = hidden.shape
        window = hidden if memory is None else torch.cat([memory, hidden], dim=0)
        if self.pre_norm:
            window = self.layer_norm(window)
        q, k, v = self.qkv(window).chunk(3, dim=-1)
        keys = window.size(0)
        q = q[-seq_len:].view(seq_len, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        k = k.view(keys, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        v = v.view(keys, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

        q_content = q + content_bias[None, :, None, :]   # q_i + u
        q_position = q + position_bias[None, :, None, :]  # q_i + v
        scores = torch.matmul(q_content, k.transpose(-1, -2))

        r_rows = self._project(distances.position_table, 0)  # (K, H, dh) or, per batch row, (B, K, H, dh)
        if not distances.tables:  # token part only, or the authors' window_end (all parts, one table per row)
            equation = "bhid,bkhd->bhik" if r_rows.dim() == 4 else "bhid,khd->bhik"
            return scores + rel_shift(torch.einsum(equation, q_position, r_rows)), v

        # W_R R for every token row and every cell of the (sentence, paragraph) grid, scored in
        # one product: a separate product over the grid's few rows runs on slow narrow kernels
        start, r_grid = self.part_dims["token"], None
        for table in distances.tables.values():
            r_part = self._project(table, start)  # (D+1, H, dh)
            r_grid = r_part if r_grid is None else (r_grid[:, None] + r_part[None, :]).flatten(0, 1)
            start += table.size(-1)
        by_row = torch.einsum("bhid,khd->bhik", q_position, torch.cat([r_rows, r_grid], dim=0))
        # split, not two slices: its backward is one concatenation, not two zero-filled full-size gradients
        by_token, by_cell = by_row.split([keys, r_grid.size(0)], dim=-1)
        cells = distances.state_cells  # (B, T, S)
        by_state = by_cell.gather(-1, cells[:, None].expand(batch, self.num_heads, *cells.shape[1:]))
        scores = torch.baddbmm(scores.flatten(1, 2), by_state.flatten(1, 2), distances.key_states)
        return scores.view(batch, self.num_heads, seq_len, keys) + rel_shift(by_token), v

    def forward(self, hidden: Tensor, memory: Optional[Tensor], distances: SegmentDistances,
                content_bias: Tensor, position_bias: Tensor, mask: Tensor) -> Tensor:
        """hidden (T, B, d), memory (M, B, d) or None, mask (T, K) True where
        the key is hidden from the query -> (T, B, d) after residual and norm."""
        scores, v = self.scores(hidden, memory, distances, content_bias, position_bias)
        scores = (scores * self.scale).float().masked_fill(mask[None, None], float("-inf"))
        probs = self.attention_dropout(torch.softmax(scores, dim=-1).type_as(v))
        attended = torch.matmul(probs, v)  # (B, H, T, dh)
        seq_len, batch = hidden.shape[:2]
        attended = attended.permute(2, 0, 1, 3).reshape(seq_len, batch, self.num_heads * self.head_dim)
        return self.out_proj(attended)
