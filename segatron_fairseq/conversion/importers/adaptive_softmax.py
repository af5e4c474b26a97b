"""Transformer-XL's adaptive softmax (``crit.*`` of a ``ProjectedAdaptiveLogSoftmax``)
as this plugin's ``BiasedAdaptiveSoftmax``, rows reordered by a ``MappedVocabulary``.

Theirs, with div_val 1: one output layer over the whole vocabulary
(``out_layers.0.weight`` (V, d), ``.bias`` (V,)) sliced into bands; with
div_val > 1 one per band (``out_layers.i``, width d / div_val^i) after a
projection ``out_projs.i`` (d, d / div_val^i). The band gates
``cluster_weight`` (C, d), ``cluster_bias`` (C,) are appended to the head's
logits. Which gate opens which band differs: in the Segatron authors' fork
band i (1-based) is gated by the head's column -i (``reversed_gates``, the
rows are read in reverse); Hugging Face's ``TransfoXLLMHeadModel`` gates band
i by column cutoff_0 + i - 1. Ours: ``head`` (cutoff_0 + C rows: words, then
the gate of band 1, 2, ...), and per band a projection (the identity with
div_val 1) and an output layer with bias; the head's projection is folded
into the head's weight. The specials their vocabulary lacks get weight 0 and
bias -inf: probability 0, as in their model.
"""
from typing import Dict

import torch
from torch import Tensor

from .vocabulary import MappedVocabulary


def adaptive_softmax_state(crit: Dict[str, Tensor], vocabulary: MappedVocabulary, div_val: int,
                           reversed_gates: bool, prefix: str = "decoder.adaptive_softmax.") -> Dict[str, Tensor]:
    """Our state entries for their ``crit.*`` (the ``crit.`` prefix removed)."""
    n_bands = len(vocabulary.cutoffs) + 1
    if div_val == 1:  # one output layer, sliced; no projections
        weight, bias = crit["out_layers.0.weight"], crit["out_layers.0.bias"]
        n_token, dim = weight.shape
        theirs = [0] + [c - len(vocabulary.missing) for c in vocabulary.cutoffs] + [n_token]
        weights = [weight[theirs[i]:theirs[i + 1]] for i in range(n_bands)]
        biases = [bias[theirs[i]:theirs[i + 1]] for i in range(n_bands)]
        projections = [None] + [torch.eye(dim, dtype=weight.dtype)] * (n_bands - 1)
    else:  # one output layer per band, each after its projection (d, d_band): logits = (h proj) W^T + b
        weights = [crit[f"out_layers.{i}.weight"] for i in range(n_bands)]
        biases = [crit[f"out_layers.{i}.bias"] for i in range(n_bands)]
        projections = [crit[f"out_projs.{i}"] for i in range(n_bands)]
    gates_weight, gates_bias = crit["cluster_weight"], crit["cluster_bias"]
    if reversed_gates:
        gates_weight, gates_bias = gates_weight.flip(0), gates_bias.flip(0)
    head_size = vocabulary.cutoffs[0]
    head_weight = weights[0].new_zeros(head_size, weights[0].size(1))
    head_bias = biases[0].new_full((head_size,), float("-inf"))
    head_words = vocabulary.index[:weights[0].size(0)]
    head_weight[head_words], head_bias[head_words] = weights[0], biases[0]
    head_weight = torch.cat([head_weight, gates_weight])
    if projections[0] is not None:  # the head's projection folded in: (h proj) W^T = h (W proj^T)^T
        head_weight = head_weight @ projections[0].t()
    state = {prefix + "head.weight": head_weight, prefix + "head.bias": torch.cat([head_bias, gates_bias])}
    for band in range(1, n_bands):
        state[prefix + f"tail.{band - 1}.0.weight"] = projections[band].t()
        state[prefix + f"tail.{band - 1}.2.weight"] = weights[band]
        state[prefix + f"tail.{band - 1}.2.bias"] = biases[band]
    state[prefix + "version"] = torch.LongTensor([1])
    return state
