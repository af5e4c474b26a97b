"""Sentence-BERT's classifier of a sentence pair (S-SegaBERT): the pooled
embeddings u, v (B, d) each -> the logits of concat(u, v, |u - v|), (B, C)."""
import torch
from torch import nn


class SiameseHead(nn.Module):
    def __init__(self, input_dim: int, num_classes: int):
        super().__init__()
        self.out_proj = nn.Linear(3 * input_dim, num_classes)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.out_proj(torch.cat([u, v, (u - v).abs()], dim=-1))  # (B, C)
