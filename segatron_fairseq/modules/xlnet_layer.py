"""One XLNet block: two-stream relative attention (the content stream h and
the query stream g share every weight; ``xlnet_attention.py``), then XLNet's
feed-forward network (gelu), each followed by dropout, the residual and a
LayerNorm (post-norm)."""
from typing import Optional

from torch import Tensor, nn

from .segment_distances import SegmentDistances
from .xlnet_attention import RelativeSegments, TwoStreamAttention, TwoStreamRelativeAttention


class XLNetLayer(nn.Module):
    def __init__(self, embed_dim, num_heads, head_dim, ffn_dim, part_dims, dropout, attention_dropout):
        super().__init__()
        self.attention = TwoStreamRelativeAttention(embed_dim, num_heads, head_dim, part_dims, attention_dropout)
        self.attention_norm = nn.LayerNorm(embed_dim, eps=1e-12)
        self.ffn = nn.Sequential(
            nn.Linear(embed_dim, ffn_dim), nn.GELU(), nn.Dropout(dropout),
            nn.Linear(ffn_dim, embed_dim), nn.Dropout(dropout),
        )
        self.ffn_norm = nn.LayerNorm(embed_dim, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def _post(self, stream: Tensor, attended: Tensor) -> Tensor:
        stream = self.attention_norm(stream + self.dropout(attended))
        return self.ffn_norm(stream + self.ffn(stream))

    def forward(self, content: Tensor, query: Optional[Tensor], memory: Optional[Tensor],
                distances: SegmentDistances, content_bias: Tensor, position_bias: Tensor,
                segments: Optional[RelativeSegments], content_mask: Tensor, query_mask: Optional[Tensor],
                target_mapping: Optional[Tensor] = None, need_weights: bool = False) -> TwoStreamAttention:
        """content (T, B, d); query (P, B, d) at the P targets of
        ``target_mapping`` (B, P, T), or None; memory (M, B, d): this layer's
        cached content inputs. Returns both streams' outputs and their
        attention probabilities (see ``TwoStreamRelativeAttention.forward``)."""
        attended = self.attention(content, query, memory, distances, content_bias, position_bias, segments,
                                  content_mask, query_mask, target_mapping, need_weights)
        return TwoStreamAttention(self._post(content, attended.content),
                                  None if query is None else self._post(query, attended.query), attended.weights)
