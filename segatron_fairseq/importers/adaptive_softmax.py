"""Transformer-XL's adaptive softmax (``crit.*`` of a ``ProjectedAdaptiveLogSoftmax``)
as this plugin's ``BiasedAdaptiveSoftmax``, rows reordered by a ``MappedVocabulary``.

Theirs, with div_val 1: one output layer over the whole vocabulary
(``out_layers.0.weight`` (V, d), ``.bias`` (V,)) sliced into bands, and the
band gates ``cluster_weight`` (C, d), ``cluster_bias`` (C,) appended to the
head's logits. Band i (1-based) is gated by column -i of the head, so the
gate rows are read in reverse. Ours: ``head`` (cutoff_0 + C rows: words, then
the gate of band 1, 2, ...), and per band a projection (the identity here)
and an output layer with bias. The specials their vocabulary lacks get weight
0 and bias -inf: probability 0, as in their model.
"""
from typing import Dict

import torch
from torch import Tensor

from .vocabulary import MappedVocabulary


def adaptive_softmax_state(crit: Dict[str, Tensor], vocabulary: MappedVocabulary, div_val: int,
                           prefix: str = "decoder.adaptive_softmax.") -> Dict[str, Tensor]:
    if div_val != 1:
        raise NotImplementedError(f"importing an adaptive softmax with div_val {div_val} (only 1 so far)")
    weight, bias = crit["out_layers.0.weight"], crit["out_layers.0.bias"]
    gates_weight, gates_bias = crit["cluster_weight"].flip(0), crit["cluster_bias"].flip(0)
    n_token, dim = weight.shape
    theirs = [0] + [c - len(vocabulary.missing) for c in vocabulary.cutoffs] + [n_token]
    head = vocabulary.cutoffs[0]
    state = {}
    head_weight = weight.new_zeros(head, dim)
    head_bias = bias.new_full((head,), float("-inf"))
    head_weight[vocabulary.index[:theirs[1]]] = weight[:theirs[1]]
    head_bias[vocabulary.index[:theirs[1]]] = bias[:theirs[1]]
    state[prefix + "head.weight"] = torch.cat([head_weight, gates_weight])
    state[prefix + "head.bias"] = torch.cat([head_bias, gates_bias])
    for band in range(1, len(theirs) - 1):
        rows = slice(theirs[band], theirs[band + 1])
        state[prefix + f"tail.{band - 1}.0.weight"] = torch.eye(dim, dtype=weight.dtype)
        state[prefix + f"tail.{band - 1}.2.weight"] = weight[rows]
        state[prefix + f"tail.{band - 1}.2.bias"] = bias[rows]
    state[prefix + "version"] = torch.LongTensor([1])
    return state
