"""One Segatron-XL block: segment-aware relative attention and a feed-forward
network, each with residual, dropout and LayerNorm (post-norm as in
Transformer-XL, or pre-norm)."""
from typing import Callable, Optional, Tuple

from torch import Tensor, nn

from .segment_distances import SegmentDistances
from .segment_relative_attention import SegmentRelativeMultiheadAttention


class SegatronXLLayer(nn.Module):
    def __init__(self, embed_dim, num_heads, head_dim, ffn_dim, part_dims, dropout, attention_dropout,
                 pre_norm):
        super().__init__()
        self.attention = SegmentRelativeMultiheadAttention(embed_dim, num_heads, head_dim, part_dims,
                                                           attention_dropout)
        self.attention_norm = nn.LayerNorm(embed_dim)
        self.ffn = nn.Sequential(
            nn.Linear(embed_dim, ffn_dim), nn.ReLU(inplace=True), nn.Dropout(dropout),
            nn.Linear(ffn_dim, embed_dim), nn.Dropout(dropout),
        )
        self.ffn_norm = nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, hidden: Tensor, memory: Optional[Tensor], distances: SegmentDistances,
                content_bias: Tensor, position_bias: Tensor, mask: Tensor,
                need_weights: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """hidden (T, B, d); memory (M, B, d): this layer's inputs cached from
        earlier segments. Pre-norm normalizes the whole window (memory and
        segment) before the attention; post-norm normalizes after each residual.
        Returns the layer's output (T, B, d) and, with ``need_weights``, its
        attention probabilities (B, H, T, K)."""
        if self.pre_norm:
            window_memory = None if memory is None else self.attention_norm(memory)
            attended, weights = self.attention(self.attention_norm(hidden), window_memory, distances, content_bias,
                                               position_bias, mask, need_weights)
            hidden = hidden + self.dropout(attended)
            return hidden + self.ffn(self.ffn_norm(hidden)), weights
        attended, weights = self.attention(hidden, memory, distances, content_bias, position_bias, mask,
                                           need_weights)
        hidden = self.attention_norm(hidden + self.dropout(attended))
        return self.ffn_norm(hidden + self.ffn(hidden)), weights

    def step(self, hidden: Tensor, append: Callable[[Tensor, Tensor], Tuple[Tensor, Tensor]],
             position_table: Tensor, position_index: Tensor, content_bias: Tensor, position_bias: Tensor) -> Tensor:
        """``forward`` for one new position (B, d) at the end of the window:
        ``append(key, value)`` stores its key and value (B, H, 1, dh) after the
        cached ones and returns the window's (B, H, K, dh) (see
        ``SegmentRelativeMultiheadAttention.step``). Returns the output (B, d)."""
        attended_input = self.attention_norm(hidden) if self.pre_norm else hidden
        query, key, value = self.attention.project(attended_input[None])  # (B, H, 1, dh) each
        keys, values = append(key, value)
        attended = self.attention.step(query, keys, values, position_table, position_index, content_bias,
                                       position_bias)
        if self.pre_norm:
            hidden = hidden + self.dropout(attended)
            return hidden + self.ffn(self.ffn_norm(hidden))
        hidden = self.attention_norm(hidden + self.dropout(attended))
        return self.ffn_norm(hidden + self.ffn(hidden))

    def window_keys(self, memory: Tensor) -> Tuple[Tensor, Tensor]:
        """Keys and values (B, H, M, dh) of this layer's cached inputs (M, B, d)."""
        _, keys, values = self.attention.project(self.attention_norm(memory) if self.pre_norm else memory)
        return keys, values
