"""A state dict in the layout of the original Transformer-XL PyTorch code
(``MemTransformerLM``), which both the Segatron authors' fork
(``SegaMemTransformerLM``) and Hugging Face's ``TransfoXLLMHeadModel`` (after
its ``transformer.`` prefix) keep, as a ``segatron_xl`` checkpoint.

Their state dict -> ours (N: layer):
    word_emb.emb_layers.0.weight         decoder.embed_tokens.weight (rows in fairseq's order)
    word_emb.emb_layers.i / emb_projs.i  decoder.embed_tokens.embeddings.i.0 / .1  (div_val > 1: AdaptiveInput)
    r_w_bias / r_r_bias (H, dh)          decoder.content_bias / position_bias (1, H, dh): one pair
    layers.N.dec_attn.r_w_bias / r_r_bias  row N of decoder.content_bias / position_bias (L, H, dh)
    layers.N.dec_attn.qkv_net            decoder.layers.N.attention.qkv        (q, k, v stacked)
    layers.N.dec_attn.r_net              decoder.layers.N.attention.r_proj     (R = [token, sentence, paragraph])
    layers.N.dec_attn.o_net              decoder.layers.N.attention.out_proj
    layers.N.dec_attn.layer_norm         decoder.layers.N.attention_norm
    layers.N.pos_ff.CoreNet.0 / .3       decoder.layers.N.ffn.0 / .3
    layers.N.pos_ff.layer_norm           decoder.layers.N.ffn_norm
    crit.*                               decoder.adaptive_softmax.* (``adaptive_softmax.py``)
With segment parts (``{t,s,p}_pos_emb``, the authors' fork) the model runs
with their distances (``--segment-distance-origin window_end``). Their output
layer (and with tie_projs, its projections) is tied to the input
embedding; here the two are copies.
"""
from typing import Dict, List, Tuple

import torch
from torch import Tensor

from .adaptive_softmax import adaptive_softmax_state
from .vocabulary import MappedVocabulary

_LAYER_KEYS = {"dec_attn.qkv_net.weight": "attention.qkv.weight", "dec_attn.r_net.weight": "attention.r_proj.weight",
               "dec_attn.o_net.weight": "attention.out_proj.weight",
               "dec_attn.layer_norm.weight": "attention_norm.weight", "dec_attn.layer_norm.bias": "attention_norm.bias",
               "pos_ff.CoreNet.0.weight": "ffn.0.weight", "pos_ff.CoreNet.0.bias": "ffn.0.bias",
               "pos_ff.CoreNet.3.weight": "ffn.3.weight", "pos_ff.CoreNet.3.bias": "ffn.3.bias",
               "pos_ff.layer_norm.weight": "ffn_norm.weight", "pos_ff.layer_norm.bias": "ffn_norm.bias"}


# what ``convert`` reads of their constructor arguments, besides the vocabulary
CONFIG_KEYS = ("n_layer", "n_head", "d_model", "d_head", "d_inner", "dropout", "dropatt", "mem_len", "clamp_len",
               "tgt_len", "div_val")


def _check(config: Dict, source: str) -> None:
    if config.get("attn_type", 0) != 0:
        raise NotImplementedError(f"{source}: attn_type = {config['attn_type']} is not supported yet (only 0)")
    if config.get("d_embed", config["d_model"]) != config["d_model"]:
        raise NotImplementedError(f"{source}: d_embed {config['d_embed']} != d_model {config['d_model']}")


def _embedding_state(state: Dict[str, Tensor], vocabulary: MappedVocabulary, div_val: int) -> Dict[str, Tensor]:
    """Their ``word_emb`` (an ``AdaptiveEmbedding``) as ``decoder.embed_tokens``:
    one table with div_val 1; with div_val > 1 fairseq's ``AdaptiveInput``,
    band i's table (width d / div_val^i) and projection ``emb_projs.i``."""
    first = state["word_emb.emb_layers.0.weight"]
    head = first.new_zeros(vocabulary.cutoffs[0] if div_val > 1 else len(vocabulary.dictionary), first.size(1))
    head[vocabulary.index[:first.size(0)]] = first
    if div_val == 1:
        return {"decoder.embed_tokens.weight": head}
    converted = {"decoder.embed_tokens._float_tensor": torch.zeros(1)}
    for band in range(len(vocabulary.cutoffs) + 1):
        table = head if band == 0 else state[f"word_emb.emb_layers.{band}.weight"]
        converted[f"decoder.embed_tokens.embeddings.{band}.0.weight"] = table
        converted[f"decoder.embed_tokens.embeddings.{band}.1.weight"] = state[f"word_emb.emb_projs.{band}"]
    return converted


def _position_biases(state: Dict[str, Tensor], n_layer: int, source: str) -> Dict[str, Tensor]:
    """u, v as ``decoder.content_bias`` / ``position_bias``: one pair, or one per layer."""
    if "r_w_bias" in state and "r_r_bias" in state:
        return {"decoder.content_bias": state["r_w_bias"][None], "decoder.position_bias": state["r_r_bias"][None]}
    per_layer = [f"layers.{layer}.dec_attn.{name}" for name in ("r_w_bias", "r_r_bias") for layer in range(n_layer)]
    missing = [key for key in per_layer if key not in state]
    if missing:
        raise ValueError(f"{source}: neither one u, v pair (r_w_bias, r_r_bias) nor one per layer "
                         f"(missing {', '.join(missing)})")
    return {"decoder.content_bias": torch.stack([state[f"layers.{n}.dec_attn.r_w_bias"] for n in range(n_layer)]),
            "decoder.position_bias": torch.stack([state[f"layers.{n}.dec_attn.r_r_bias"] for n in range(n_layer)])}


def convert(state: Dict[str, Tensor], config: Dict, vocabulary: MappedVocabulary, source: str,
            reversed_gates: bool) -> Tuple[List[str], Dict[str, Tensor]]:
    """``state``: their state dict; ``config``: their model's constructor
    arguments (n_layer, n_head, d_model, ..., tgt_len); ``reversed_gates``: the
    adaptive softmax's gate order (``adaptive_softmax.py``). Returns the
    fairseq-train arguments of the model and its state dict."""
    _check(config, source)
    segment_parts = "s_pos_emb.inv_freq" in state
    biases = _position_biases(state, config["n_layer"], source)
    arguments = ["--arch", "segatron_xl", "--decoder-layers", config["n_layer"], "--decoder-embed-dim",
                 config["d_model"], "--decoder-attention-heads", config["n_head"], "--decoder-head-dim",
                 config["d_head"], "--decoder-ffn-embed-dim", config["d_inner"], "--dropout", config["dropout"],
                 "--attention-dropout", config["dropatt"], "--mem-len", config["mem_len"], "--clamp-len",
                 config["clamp_len"], "--tgt-len", config["tgt_len"],
                 "--adaptive-softmax-cutoff", ",".join(map(str, vocabulary.cutoffs)), "--adaptive-softmax-bias",
                 "--adaptive-softmax-factor", config["div_val"]]
    arguments += ["--adaptive-input"] if config["div_val"] > 1 else []
    arguments += ["--pre-norm"] if config.get("pre_lnorm") else []
    arguments += ["--same-length"] if config.get("same_length") else []
    arguments += ["--segment-distance-origin", "window_end"] if segment_parts else [
        "--no-sentence-part", "--no-paragraph-part"]
    arguments += ["--per-layer-position-biases"] if biases["decoder.content_bias"].size(0) > 1 else []
    bands = range(len(vocabulary.cutoffs) + 1) if config["div_val"] > 1 else [0]
    needed = ["crit.cluster_weight"] + [
        f"{kind}.{band}{suffix}" for band in bands
        for kind, suffix in (("word_emb.emb_layers", ".weight"), ("crit.out_layers", ".weight"))]
    needed += [f"{kind}.{band}" for band in bands for kind in ("word_emb.emb_projs", "crit.out_projs")
               if config["div_val"] > 1]
    missing = [k for k in needed if k not in state]
    if missing:
        raise ValueError(f"{source}: not the state dict of a Transformer-XL with div_val "
                         f"{config['div_val']} (missing {', '.join(missing)})")
    converted = {**biases, **_embedding_state(state, vocabulary, config["div_val"])}
    for layer in range(config["n_layer"]):
        for theirs, ours in _LAYER_KEYS.items():
            converted[f"decoder.layers.{layer}.{ours}"] = state[f"layers.{layer}.{theirs}"]
    crit = {key[len("crit."):]: value for key, value in state.items() if key.startswith("crit.")}
    converted.update(adaptive_softmax_state(crit, vocabulary, config["div_val"], reversed_gates))
    return [str(a) for a in arguments], {key: value.float() if value.is_floating_point() else value
                                         for key, value in converted.items()}
