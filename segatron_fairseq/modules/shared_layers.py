"""Cross-layer parameter sharing (ALBERT) over fairseq's encoder layers.

Layer l of L uses the weights of group ``floor(l * G / L)`` (ALBERT's
``num_hidden_groups`` G; G = 1 shares one layer's weights among all L). What a
group shares (``SHARING``):

- ``all``: the whole layer (ALBERT): the same ``TransformerEncoderLayer``
  object appears at each of the group's positions of ``layers``;
- ``attention``: the self-attention block (q, k, v, output projections and the
  LayerNorm after its residual, post-norm as ALBERT's attention holds it), each
  layer keeping its own feed-forward block;
- ``ffn``: the feed-forward block (fc1, fc2 and the LayerNorm after its residual),
  each layer keeping its own attention;
- ``none``: nothing (every layer its own, the state dict as without sharing).

fairseq 0.12.2's layers also hold zero copies of their attention and
feed-forward weights for PyTorch's fused inference path (``in_proj_weight``,
``fc1_weight``, ...: parameters, counted by fairseq, overwritten when a
checkpoint loads); they are shared with the block they copy.

The state dict holds each shared tensor once, under its owner, the first layer
of its group (``layers.0.*`` for G = 1); the other layers' keys of the shared
block are left out on saving and filled in from the owner's on loading.
``parameters()`` yields a shared tensor once, so fairseq's parameter count and
the optimizer see it once; its gradient sums the contributions of every layer
that uses it.
"""
from typing import Dict, List

from torch import nn

SHARING = ("none", "all", "attention", "ffn")
# the attributes of fairseq's TransformerEncoderLayer that each kind of sharing shares: its sub-modules, and
# the copies of their weights that fairseq 0.12.2 keeps for PyTorch's fused inference path ("BT", filled in
# when a checkpoint loads), which go with the block they copy
SHARED_BLOCKS = {"all": ("",),
                 "attention": ("self_attn", "self_attn_layer_norm", "in_proj_weight", "in_proj_bias",
                               "out_proj_weight", "out_proj_bias"),
                 "ffn": ("fc1", "fc2", "final_layer_norm", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")}


def layer_groups(num_layers: int, num_groups: int) -> List[int]:
    """The group of each layer, ``floor(l * G / L)`` (ALBERT's assignment)."""
    if not 1 <= num_groups <= num_layers:
        raise ValueError(f"{num_groups} layer groups for {num_layers} layers (need 1 to {num_layers})")
    return [layer * num_groups // num_layers for layer in range(num_layers)]


def owners(num_layers: int, num_groups: int) -> List[int]:
    """For each layer, the first layer of its group (whose weights it uses)."""
    groups = layer_groups(num_layers, num_groups)
    return [groups.index(group) for group in groups]


def share_layers(encoder: nn.Module, sharing: str, num_groups: int = 1) -> None:
    """Make ``encoder.layers`` (fairseq's encoder layers) share ``sharing``'s
    blocks among the layers of each of ``num_groups`` groups, in place."""
    if sharing not in SHARING:
        raise ValueError(f"layer sharing {sharing!r} (choose from {', '.join(SHARING)})")
    if sharing == "none":
        return
    layers = encoder.layers
    owner = owners(len(layers), num_groups)
    for layer, first in enumerate(owner):
        if first == layer:
            continue
        if sharing == "all":
            layers[layer] = layers[first]
        else:
            for block in SHARED_BLOCKS[sharing]:
                setattr(layers[layer], block, getattr(layers[first], block))
    aliases = _aliases(owner, sharing)
    encoder._register_state_dict_hook(_drop_aliases(aliases))
    encoder._register_load_state_dict_pre_hook(_fill_aliases(aliases))


def _aliases(owner: List[int], sharing: str) -> Dict[str, str]:
    """Key prefix of each layer's shared block (relative to the encoder) ->
    the prefix of its owner's."""
    aliases = {}
    for layer, first in enumerate(owner):
        if first != layer:
            for block in SHARED_BLOCKS[sharing]:
                suffix = f".{block}" if block else ""
                aliases[f"layers.{layer}{suffix}"] = f"layers.{first}{suffix}"
    return aliases


def _under(key: str, prefix: str) -> bool:
    """Whether state dict ``key`` is ``prefix`` or lies under it."""
    return key == prefix or key.startswith(prefix + ".")


def _drop_aliases(aliases: Dict[str, str]):
    def hook(module, state_dict, prefix, local_metadata):
        for key in [k for k in state_dict if k.startswith(prefix)]:
            if any(_under(key, prefix + alias) for alias in aliases):
                del state_dict[key]
        return state_dict

    return hook


def _fill_aliases(aliases: Dict[str, str]):
    def hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for alias, source in aliases.items():
            for key in [k for k in state_dict if _under(k, prefix + source)]:
                state_dict.setdefault(prefix + alias + key[len(prefix + source):], state_dict[key])

    return hook
