"""Sentence embeddings from an encoder's last layer: the mean of its token
states (Sentence-BERT's default), the [CLS] state, or the max over tokens;
padding is left out, [CLS] and [SEP] count as tokens."""
import torch

POOLINGS = ("mean", "cls", "max")


def pool(features: torch.Tensor, padding: torch.Tensor, mode: str) -> torch.Tensor:
    """(B, T, d) states and (B, T) padding (True at pads) -> (B, d)."""
    if mode == "cls":
        return features[:, 0]
    keep = (~padding).unsqueeze(-1).to(features.dtype)
    if mode == "mean":
        return (features * keep).sum(dim=1) / keep.sum(dim=1).clamp_min(1)
    if mode == "max":
        return features.masked_fill(padding.unsqueeze(-1), float("-inf")).max(dim=1).values
    raise ValueError(f"pooling {mode!r}: choose from {POOLINGS}")
