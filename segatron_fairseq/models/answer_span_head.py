"""BERT's reading-comprehension head: the start and end logits of an answer
span at every token, (B, T, d) -> (B, T, 2)."""
import torch
from torch import nn


class SpanHead(nn.Module):
    def __init__(self, input_dim: int):
        super().__init__()
        self.out_proj = nn.Linear(input_dim, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out_proj(features)  # (B, T, 2)
