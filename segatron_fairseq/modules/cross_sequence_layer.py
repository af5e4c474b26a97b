"""Cross-sequence Transformer layer of Cross-Thought (Eq. 4-7).

It runs over the M sequence embeddings of one special-token index, F_n
(M, B, d): a post-norm Transformer layer built from fairseq's
MultiheadAttention. ``attention_weights`` gives Eq. 7's alpha per head,
softmax(F W^Q (F W^K)^T / sqrt(d_head)), before any dropout, from the same
projections the layer attends with.
"""
from typing import Optional, Tuple

import torch
from fairseq.modules import LayerNorm, MultiheadAttention
from torch import Tensor, nn


class CrossSequenceLayer(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, ffn_dim: int, dropout: float, attention_dropout: float):
        super().__init__()
        self.num_heads = num_heads
        self.attention = MultiheadAttention(embed_dim, num_heads, dropout=attention_dropout, self_attention=True)
        self.attention_norm = LayerNorm(embed_dim)
        self.ffn = nn.Sequential(nn.Linear(embed_dim, ffn_dim), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(ffn_dim, embed_dim))
        self.ffn_norm = LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def self_mask(num_sequences: int, like: Tensor) -> Tensor:
        """(M, M) additive mask that stops each sequence attending to itself."""
        mask = torch.zeros(num_sequences, num_sequences, dtype=like.dtype, device=like.device)
        return mask.fill_diagonal_(float("-inf"))

    def attention_weights(self, queries: Tensor, keys: Tensor, mask_self: bool = False,
                          padding_mask: Optional[Tensor] = None) -> Tensor:
        """alpha (B, H, Mq, Mk) of Eq. 7 for query embeddings (Mq, B, d) over key
        embeddings (Mk, B, d); ``mask_self`` needs Mq == Mk."""
        heads = self.num_heads
        q = self.attention.q_proj(queries) * self.attention.scaling
        k = self.attention.k_proj(keys)
        q = q.view(q.size(0), q.size(1), heads, -1).permute(1, 2, 0, 3)
        k = k.view(k.size(0), k.size(1), heads, -1).permute(1, 2, 3, 0)
        scores = torch.matmul(q, k).float()
        if mask_self:
            scores = scores + self.self_mask(scores.size(-1), scores)
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1)

    def forward(self, embeddings: Tensor, mask_self: bool = False,
                padding_mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        """embeddings (M, B, d); padding_mask (B, M) True for missing sequences.
        Returns C (M, B, d) and alpha (B, H, M, M)."""
        missing = padding_mask
        attn_mask = self.self_mask(embeddings.size(0), embeddings) if mask_self else None
        if padding_mask is not None and attn_mask is not None:  # one mask type for both (additive)
            padding_mask = torch.zeros_like(padding_mask, dtype=embeddings.dtype).masked_fill(
                padding_mask, float("-inf"))
        attended, _ = self.attention(embeddings, embeddings, embeddings, key_padding_mask=padding_mask,
                                     attn_mask=attn_mask, need_weights=False)
        hidden = self.attention_norm(embeddings + self.dropout(attended))
        hidden = self.ffn_norm(hidden + self.dropout(self.ffn(hidden)))
        return hidden, self.attention_weights(embeddings, embeddings, mask_self, missing)
