"""The cloze two-tower model's attention masks and its combination block
(Baevski et al., 2019, "Combination of representations").

Masks are boolean, True where a query may NOT attend (the convention of
``torch.nn.functional.multi_head_attention_forward``), for T positions:

- ``forward_tower_mask``: position i sees j <= i (left to right);
- ``backward_tower_mask``: position i sees j >= i (right to left);
- ``combination_mask``: query i against the 2T keys [F_0..F_{T-1}, B_0..B_{T-1}];
  ``full`` (pre-training) lets it see F_j for j < i and B_j for j > i only,
  so no state that saw token i; ``none`` (fine-tuning) masks nothing.

Every attention of the model has fairseq's extra zero key/value slot
(``add_zero_attn``), the paper's "extra zero state": the first query of the
combination (no left context) and padded positions always have something to
attend to.
"""
from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.modules import FairseqDropout, LayerNorm, MultiheadAttention
from torch import nn

COMBINATION_MASKS = ("full", "none")
QUERY_COMBINATIONS = ("sum", "concat")


def forward_tower_mask(length: int, device=None) -> torch.Tensor:
    """(T, T): True above the diagonal (the future)."""
    return torch.ones(length, length, dtype=torch.bool, device=device).triu(1)


def backward_tower_mask(length: int, device=None) -> torch.Tensor:
    """(T, T): True below the diagonal (the past)."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril(-1)


def combination_mask(length: int, mode: str, device=None) -> Optional[torch.Tensor]:
    """(T, 2T) for ``full``: query i blocked from F_j, j >= i, and from B_j,
    j <= i; None for ``none``."""
    if mode == "none":
        return None
    if mode != "full":
        raise ValueError(f"combination mask {mode!r}: one of {', '.join(COMBINATION_MASKS)}")
    ones = torch.ones(length, length, dtype=torch.bool, device=device)
    return torch.cat([ones.triu(0), ones.tril(0)], dim=1)


class ClozeCombination(nn.Module):
    """The block on top of the two towers: separate pre-LayerNorms of the
    forward and backward states; a query per position from F_{i-1} and
    B_{i+1} (zero past either edge and at padding), summed or concatenated
    and projected back to d; multi-head attention over all 2T normalised
    states (no residual), then a pre-LN ReLU feed-forward block with its
    residual. Input and output are (T, B, d)."""

    def __init__(self, embed_dim: int, ffn_embed_dim: int, heads: int, dropout: float, attention_dropout: float,
                 activation_dropout: float, query: str = "sum"):
        super().__init__()
        if query not in QUERY_COMBINATIONS:
            raise ValueError(f"query combination {query!r}: one of {', '.join(QUERY_COMBINATIONS)}")
        self.forward_norm = LayerNorm(embed_dim)
        self.backward_norm = LayerNorm(embed_dim)
        self.query_projection = nn.Linear(2 * embed_dim, embed_dim) if query == "concat" else None
        self.attention = MultiheadAttention(embed_dim, heads, dropout=attention_dropout, add_zero_attn=True)
        self.dropout = FairseqDropout(dropout, module_name=type(self).__name__)
        self.activation_dropout = FairseqDropout(activation_dropout, module_name=type(self).__name__)
        self.ffn_norm = LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_embed_dim)
        self.fc2 = nn.Linear(ffn_embed_dim, embed_dim)

    def queries(self, fwd: torch.Tensor, bwd: torch.Tensor) -> torch.Tensor:
        """(T, B, d) normalised states (zero at padding) -> (T, B, d) queries
        from F_{i-1} and B_{i+1}."""
        zero = fwd.new_zeros((1,) + fwd.shape[1:])
        previous = torch.cat([zero, fwd[:-1]], dim=0)
        following = torch.cat([bwd[1:], zero], dim=0)
        if self.query_projection is None:
            return previous + following
        return self.query_projection(torch.cat([previous, following], dim=-1))

    def forward(self, fwd: torch.Tensor, bwd: torch.Tensor, padding_mask: Optional[torch.Tensor],
                mask: str = "full") -> torch.Tensor:
        """``fwd``, ``bwd``: (T, B, d) top states of the towers;
        ``padding_mask``: (B, T), True at padding, or None; ``mask``: one of
        ``COMBINATION_MASKS``."""
        fwd, bwd = self.forward_norm(fwd), self.backward_norm(bwd)
        if padding_mask is not None:
            at_padding = padding_mask.t().unsqueeze(-1)
            fwd, bwd = fwd.masked_fill(at_padding, 0.0), bwd.masked_fill(at_padding, 0.0)
        states = torch.cat([fwd, bwd], dim=0)
        keys_padding = None if padding_mask is None else torch.cat([padding_mask, padding_mask], dim=1)
        x, _ = self.attention(self.queries(fwd, bwd), states, states, key_padding_mask=keys_padding,
                              attn_mask=combination_mask(fwd.size(0), mask, fwd.device), need_weights=False)
        x = self.dropout(x)
        residual = x
        x = self.activation_dropout(F.relu(self.fc1(self.ffn_norm(x))))
        return residual + self.dropout(self.fc2(x))
