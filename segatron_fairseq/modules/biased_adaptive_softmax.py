"""fairseq's ``AdaptiveSoftmax`` with a bias on every output: the head's
(its words and the band gates) and each band's last projection, as
Transformer-XL's ``ProjectedAdaptiveLogSoftmax`` has. Transformer-XL
checkpoints (the Segatron authors', Hugging Face's) carry those biases;
fairseq's adaptive softmax has none. Tied to an ``AdaptiveInput`` (as the
authors train), the weights are the input's and only the biases are its own.

    log p(w) = head(h)[w]                                      w in the head
             = head(h)[gate of band i] + band_i(h)[w - c_i]     w in band i
    head(h)   = log_softmax(W_head h + b_head)
    band_i(h) = log_softmax(W_i P_i h + b_i)                    (P_i: d -> d / factor^(i+1))
"""
import torch
from fairseq.modules import AdaptiveSoftmax
from torch import nn


class OutputBias(nn.Module):
    """``layer(x) + bias`` (bias: (size,), zeros at first), for a tied output
    layer, whose weight belongs to the adaptive input."""

    def __init__(self, layer: nn.Module, size: int):
        super().__init__()
        self.layer = layer
        self.bias = nn.Parameter(torch.zeros(size))

    def forward(self, x):
        return self.layer(x) + self.bias


class BiasedAdaptiveSoftmax(AdaptiveSoftmax):
    def __init__(self, vocab_size: int, input_dim: int, cutoff, dropout: float, factor: float = 4.0,
                 adaptive_inputs=None, tie_proj: bool = False):
        super().__init__(vocab_size, input_dim, cutoff, dropout, factor=factor, adaptive_inputs=adaptive_inputs,
                         tie_proj=tie_proj)
        if adaptive_inputs is not None:
            self.head = OutputBias(self.head, self.head.out_dim)
            for band in self.tail:
                band[-1] = OutputBias(band[-1], band[-1].weight.size(0))
            return
        self.head = nn.Linear(input_dim, self.head.weight.size(0), bias=True)
        for band in self.tail:
            last = band[-1]
            band[-1] = nn.Linear(last.in_features, last.out_features, bias=True)
        for module in [self.head] + [band[-1] for band in self.tail]:
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
