"""The one mapping between ``models/xlnet.py``'s state dict (``--positions
token``) and Hugging Face's ``XLNetLMHeadModel``'s, both directions, used by
``segatron-import hf-xlnet``, ``segatron-export hf`` and the model's test.

Ours -> theirs (L layers, H heads of dh, width d; i: a layer; b: its bias set,
i without ``--tie-position-biases``, else 0):
    embed_tokens.weight (V, d)            transformer.word_embedding.weight, lm_loss.weight (tied)
    output_bias (V,)                      lm_loss.bias
    mask_emb (1, 1, d)                    transformer.mask_emb
    layers.i.attention.qkv.weight         rel_attn.q, .k, .v (d, H, dh): W_q (H dh, d) transposed, split by head
    layers.i.attention.r_proj.weight      rel_attn.r (d, H, dh), as q
    layers.i.attention.out_proj.weight    rel_attn.o (d, H, dh): W_o (d, H dh) split by head
    content_bias[b], position_bias[b], segment_bias[b] (H, dh)   rel_attn.r_w_bias, .r_r_bias, .r_s_bias
    segment_embed[i] (2, H, dh)           rel_attn.seg_embed (s+, s-)
    layers.i.attention_norm, ffn.0, ffn.3, ffn_norm   rel_attn.layer_norm, ff.layer_1, ff.layer_2, ff.layer_norm
(theirs under ``transformer.layer.i.``). Hugging Face's PyTorch XLNet keeps
the biases per layer whatever ``untie_r`` says (only its TensorFlow loader
reads ``untie_r``): one shared set is written to every layer.

The vocabulary's rows keep their order here; the importer and exporter map
them (their sentencepiece ids against our dictionary).
"""
from typing import Dict

import torch
from torch import Tensor

# our per-layer modules (weight and bias each) -> theirs
LAYER_MODULES = {"attention_norm": "rel_attn.layer_norm", "ffn.0": "ff.layer_1", "ffn.3": "ff.layer_2",
                 "ffn_norm": "ff.layer_norm"}
# our per-bias-set tensors (bias_sets, H, dh) -> theirs, one per layer (H, dh)
BIASES = {"content_bias": "rel_attn.r_w_bias", "position_bias": "rel_attn.r_r_bias",
          "segment_bias": "rel_attn.r_s_bias"}
PREFIX = "transformer."


def _by_head(weight: Tensor, heads: int) -> Tensor:
    """An input projection W (H dh, d), h -> W h, as XLNet's (d, H, dh), h -> h . W."""
    return weight.t().reshape(weight.size(1), heads, -1)


def _from_heads(weight: Tensor) -> Tensor:
    """XLNet's (d, H, dh) input projection as our W (H dh, d)."""
    return weight.reshape(weight.size(0), -1).t()


def huggingface_state(ours: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """Our XLNet's state dict (``--positions token``) as ``XLNetLMHeadModel``'s
    (every key it has, ``lm_loss.weight`` the word embedding)."""
    num_layers, _, heads, _ = ours["segment_embed"].shape
    tied = ours["content_bias"].size(0) == 1
    embeddings = ours["embed_tokens.weight"]
    theirs = {PREFIX + "word_embedding.weight": embeddings, "lm_loss.weight": embeddings,
              "lm_loss.bias": ours["output_bias"], PREFIX + "mask_emb": ours["mask_emb"]}
    for i in range(num_layers):
        layer, their_layer = f"layers.{i}.", f"{PREFIX}layer.{i}."
        q, k, v = ours[layer + "attention.qkv.weight"].chunk(3)
        projections = {"q": q, "k": k, "v": v, "r": ours[layer + "attention.r_proj.weight"]}
        theirs.update({f"{their_layer}rel_attn.{name}": _by_head(w, heads) for name, w in projections.items()})
        out = ours[layer + "attention.out_proj.weight"]
        theirs[their_layer + "rel_attn.o"] = out.reshape(out.size(0), heads, -1)
        theirs.update({f"{their_layer}{name}": ours[key][0 if tied else i] for key, name in BIASES.items()})
        theirs[their_layer + "rel_attn.seg_embed"] = ours["segment_embed"][i]
        theirs.update({f"{their_layer}{name}.{kind}": ours[f"{layer}{module}.{kind}"]
                       for module, name in LAYER_MODULES.items() for kind in ("weight", "bias")})
    return theirs


def our_state(theirs: Dict[str, Tensor], tie_position_biases: bool) -> Dict[str, Tensor]:
    """``XLNetLMHeadModel``'s state dict as our XLNet's (the inverse of
    ``huggingface_state``); with ``tie_position_biases`` layer 0's biases are
    the shared set. A missing key raises ``KeyError`` naming it."""
    num_layers = 1 + max(int(key.split(".")[2]) for key in theirs if key.startswith(PREFIX + "layer."))
    ours = {"embed_tokens.weight": theirs[PREFIX + "word_embedding.weight"], "output_bias": theirs["lm_loss.bias"],
            "mask_emb": theirs[PREFIX + "mask_emb"]}
    layers = [f"{PREFIX}layer.{i}." for i in range(num_layers)]
    for i, their_layer in enumerate(layers):
        layer = f"layers.{i}."
        ours[layer + "attention.qkv.weight"] = torch.cat([_from_heads(theirs[f"{their_layer}rel_attn.{name}"])
                                                          for name in "qkv"])
        ours[layer + "attention.r_proj.weight"] = _from_heads(theirs[their_layer + "rel_attn.r"])
        out = theirs[their_layer + "rel_attn.o"]
        ours[layer + "attention.out_proj.weight"] = out.reshape(out.size(0), -1)
        ours.update({f"{layer}{module}.{kind}": theirs[f"{their_layer}{name}.{kind}"]
                     for module, name in LAYER_MODULES.items() for kind in ("weight", "bias")})
    bias_layers = layers[:1] if tie_position_biases else layers
    ours.update({key: torch.stack([theirs[their_layer + name] for their_layer in bias_layers])
                 for key, name in BIASES.items()})
    ours["segment_embed"] = torch.stack([theirs[their_layer + "rel_attn.seg_embed"] for their_layer in layers])
    return ours


def biases_differ_across_layers(theirs: Dict[str, Tensor]) -> bool:
    """Whether the layers of ``XLNetLMHeadModel``'s state dict hold different
    r_w / r_r / r_s biases (with ``untie_r`` false they are one set copied)."""
    for name in BIASES.values():
        values = [value for key, value in theirs.items() if key.startswith(PREFIX + "layer.") and key.endswith(name)]
        if any(not torch.equal(value, values[0]) for value in values[1:]):
            return True
    return False
