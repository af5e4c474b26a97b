"""Token-labelling heads: from the encoder's features at each word's first
sub-word, (B, W, d) with a (B, W) mask of the words (a window's words first,
then padding), to a loss and to one label per word. Kept in the model's
``classification_heads`` (``SegaBERTModel.register_task_head``).

- ``TokenLinearHead``: dropout, then one linear layer to the labels' logits;
  cross-entropy of each word (BERT's NER head).
- ``TokenCRFHead``: the cloze paper's NER head (Peters et al.'s biLSTM-CRF
  with one biLSTM layer and a linear projection before it): dropout,
  projection d -> P, a one-layer biLSTM of H units each way, dropout, linear
  2H -> labels (emission scores), and a linear-chain CRF (``pytorch-crf``)
  over the words; its loss is the negative log-likelihood of the gold
  sequence, its labels the Viterbi path.

An encoder plugs in by giving the features: ``token_features(**net_input)``
(B, T, d) and ``token_feature_dim`` d (``SegaBERTModel`` has both).
"""
from typing import List

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

TOKEN_HEADS = ("linear", "bilstm_crf")


def word_features(features: torch.Tensor, word_positions: torch.Tensor) -> torch.Tensor:
    """(B, T, d) features at the (B, W) positions of the words' first sub-words -> (B, W, d)."""
    return features.gather(1, word_positions[..., None].expand(-1, -1, features.size(-1)))


def _paths(labels: torch.Tensor, mask: torch.Tensor) -> List[List[int]]:
    return [row[:length].tolist() for row, length in zip(labels.cpu(), mask.sum(1).tolist())]


class TokenLinearHead(nn.Module):
    def __init__(self, input_dim: int, num_labels: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(input_dim, num_labels)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, W, labels) logits."""
        return self.out_proj(self.dropout(features))

    def loss(self, features: torch.Tensor, mask: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The summed cross-entropy of the words."""
        return F.cross_entropy(self(features, mask)[mask].float(), target[mask], reduction="sum")

    def decode(self, features: torch.Tensor, mask: torch.Tensor) -> List[List[int]]:
        """Each window's labels, one per word."""
        return _paths(self(features, mask).argmax(-1), mask)


class TokenCRFHead(nn.Module):
    def __init__(self, input_dim: int, num_labels: int, dropout: float, projection_dim: int, lstm_dim: int):
        super().__init__()
        from torchcrf import CRF

        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Linear(input_dim, projection_dim)
        self.lstm = nn.LSTM(projection_dim, lstm_dim, num_layers=1, bidirectional=True, batch_first=True)
        self.out_proj = nn.Linear(2 * lstm_dim, num_labels)
        self.crf = CRF(num_labels, batch_first=True)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, W, labels) emission scores (the biLSTM reads each window's words only)."""
        x = self.projection(self.dropout(features))
        packed = pack_padded_sequence(x, mask.sum(1).cpu(), batch_first=True, enforce_sorted=False)
        x, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=features.size(1))
        return self.out_proj(self.dropout(x)).float()

    def loss(self, features: torch.Tensor, mask: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The summed negative log-likelihood of each window's gold labels."""
        return -crf_log_likelihood(self.crf, self(features, mask), target.masked_fill(~mask, 0), mask)

    def decode(self, features: torch.Tensor, mask: torch.Tensor) -> List[List[int]]:
        """Each window's Viterbi labels, one per word."""
        return self.crf.decode(self(features, mask), mask)


def crf_log_likelihood(crf: nn.Module, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The summed log-likelihood of ``tags`` under ``crf`` (a ``torchcrf.CRF``), in float32 whatever the dtype of
    its parameters (under --fp16 they are half, and pytorch-crf would sum the gold path's score in half)."""
    parameters = {name: p.float() for name, p in crf.named_parameters()}
    return functional_call(crf, parameters, (emissions.float(), tags, mask), {"reduction": "sum"})


def build_token_head(kind: str, input_dim: int, num_labels: int, dropout: float, projection_dim: int,
                     lstm_dim: int) -> nn.Module:
    """The head ``kind`` (one of ``TOKEN_HEADS``)."""
    if kind == "linear":
        return TokenLinearHead(input_dim, num_labels, dropout)
    if kind == "bilstm_crf":
        return TokenCRFHead(input_dim, num_labels, dropout, projection_dim, lstm_dim)
    raise ValueError(f"--token-head {kind}: choose from {', '.join(TOKEN_HEADS)}")
