"""XLNet's two-stream relative attention (Yang et al., 2019, Sec. 2.3) on
Segatron-XL's scores (``segment_relative_attention.py``: AC + BD of Eq. 1,
with bidirectional distances, ``SegmentDistances(bidirectional=True)``).

The content stream h and the query stream g share every weight. Both attend
to the keys and values of [memory; h]; g's queries come from the P target
positions only, so g sees its position without its token. W_R R is projected
once for both. Each pair (i, j) has a boolean mask (B, T, K) and XLNet's
relative segment term EF (Sec. 2.5) added to AC:

    score(i, j) = AC + BD + (q_i + b_s) . s_ij,   s_ij = s+ (same segment) or s- (not)
"""
from dataclasses import dataclass
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .segment_distances import SegmentDistances
from .segment_relative_attention import SegmentRelativeMultiheadAttention


@dataclass
class RelativeSegments:
    """XLNet's relative segment encoding for one layer: ``different`` (B, T, K)
    bool, True where query i and key j are in different segments; ``embed``
    (2, H, dh): s+ (row 0) and s- (row 1); ``bias`` (H, dh): b_s."""

    different: Tensor
    embed: Tensor
    bias: Tensor


class TwoStreamAttention(NamedTuple):
    """Outputs of ``TwoStreamRelativeAttention`` (and of ``XLNetLayer``)."""

    content: Tensor  # (T, B, d) the content stream h
    query: Optional[Tensor]  # (P, B, d) the query stream g, or None without one
    weights: tuple  # (h's (B, H, T, K), g's (B, H, P, K) or None), each None without need_weights


class TwoStreamRelativeAttention(SegmentRelativeMultiheadAttention):
    """Both streams' attention (before the residual and LayerNorm), with the
    parameters of ``SegmentRelativeMultiheadAttention``."""

    def forward(self, content: Tensor, query: Optional[Tensor], memory: Optional[Tensor],
                distances: SegmentDistances, content_bias: Tensor, position_bias: Tensor,
                segments: Optional[RelativeSegments], content_mask: Tensor, query_mask: Optional[Tensor],
                target_mapping: Optional[Tensor] = None, need_weights: bool = False) -> TwoStreamAttention:
        """The content stream h (T, B, d) and the query stream g (P, B, d) at the
        P targets of ``target_mapping`` (B, P, T) one-hot (g None: content
        only); memory (M, B, d) or None; masks (B, T, K), True where the key is
        hidden. g's queries are placed at their targets' rows of the T query
        rows only for the scores (as XLNet's code); W_q and the output
        projection run on the P rows. A hidden key scores float32's lowest
        value, as XLNet's -1e30 (a query that sees no key attends to all
        alike, not NaN)."""
        q, k, v = self.project(content, memory)  # (B, H, T, dh), (B, H, K, dh) x 2
        rows = self.position_rows(distances)  # W_R R once, for both streams
        scores = self._two_stream_scores(q, k, distances, rows, content_bias, position_bias, segments)
        lowest = torch.finfo(torch.float32).min
        content_out, content_weights = self._attend(scores, v, content_mask[:, None], need_weights, lowest)
        if query is None:
            return TwoStreamAttention(content_out, None, (content_weights, None))
        targets, batch, _ = query.shape
        seq_len, width = content.size(0), self.num_heads * self.head_dim
        mapping = target_mapping.to(query.dtype)  # (B, P, T)
        q_g = F.linear(query, self.qkv.weight[:width]).transpose(0, 1)  # (B, P, H dh): the streams share W_q
        q_g = torch.bmm(mapping.transpose(1, 2), q_g)  # at the targets' rows of T, zero elsewhere
        q_g = q_g.view(batch, seq_len, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dh)
        scores = self._two_stream_scores(q_g, k, distances, rows, content_bias, position_bias, segments)
        attended, query_weights = self._attend_heads(scores, v, query_mask[:, None], need_weights, lowest)
        attended = torch.bmm(mapping, attended.transpose(1, 2).reshape(batch, seq_len, width))  # (B, P, H dh)
        query_out = self.out_proj(attended).transpose(0, 1)  # (P, B, d)
        if need_weights:
            query_weights = torch.matmul(mapping.float()[:, None], query_weights)  # (B, H, P, K)
        return TwoStreamAttention(content_out, query_out, (content_weights, query_weights))

    def _two_stream_scores(self, q: Tensor, k: Tensor, distances: SegmentDistances, rows: Tensor,
                           content_bias: Tensor, position_bias: Tensor,
                           segments: Optional[RelativeSegments]) -> Tensor:
        """Raw scores (B, H, T, K) of queries q (B, H, T, dh) against keys k (B, H, K, dh): AC, plus EF
        when ``segments`` is given, plus BD against ``rows`` (``position_rows(distances)``)."""
        ac = self._content_scores(q, k, content_bias)
        if segments is not None:
            # EF (B, H, T, 2): (q_i + b_s) . s+ and . s-, picked per pair
            ef = torch.matmul(q + segments.bias[None, :, None, :], segments.embed.permute(1, 2, 0)[None])
            ac = ac + torch.where(segments.different[:, None], ef[..., 1:], ef[..., :1])
        return self._add_position_scores(ac, q, distances, rows, position_bias)
