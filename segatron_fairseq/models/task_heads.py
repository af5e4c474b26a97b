"""Fine-tuning heads that are not RoBERTa's [CLS] classifier, kept in the
model's ``classification_heads`` (so checkpoints save and load them):

- ``SpanHead``: start and end logits of every token (BERT's reading-comprehension head),
  (B, T, d) -> (B, T, 2).
- ``SiameseHead``: Sentence-BERT's classifier over pooled u, v (B, d) each ->
  softmax logits of concat(u, v, |u - v|), (B, C).

They have an ``out_proj`` and no ``dense`` layer; ``SegaBERTModel`` upgrades
their state dict keys itself (RoBERTa's upgrade expects ``dense``).
"""
import torch
from torch import nn


class SpanHead(nn.Module):
    def __init__(self, input_dim: int):
        super().__init__()
        self.out_proj = nn.Linear(input_dim, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out_proj(features)


class SiameseHead(nn.Module):
    def __init__(self, input_dim: int, num_classes: int):
        super().__init__()
        self.out_proj = nn.Linear(3 * input_dim, num_classes)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.out_proj(torch.cat([u, v, (u - v).abs()], dim=-1))


HEAD_TYPES = {"span": SpanHead, "siamese": SiameseHead}
