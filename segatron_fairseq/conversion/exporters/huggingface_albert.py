"""A factorized or layer-sharing ``segabert`` model without index tables
(``--no-segment-positions``; e.g. ``albert_*``) as Hugging
Face's ``AlbertForMaskedLM``. The inverse of ``importers/albert.py``: layer N,
the first of its group (``--encoder-layer-groups`` G; every layer its own
group without sharing), becomes ``albert.encoder.albert_layer_groups.g.albert_layers.0``;
without a factorized embedding the E -> H mapping is the identity.
A SegaBERT model (index tables) of this kind has no Hugging Face class."""
from typing import Dict, Optional

import torch
from torch import Tensor

from segatron_fairseq.conversion.bert_names import ALBERT_LAYER_KEYS, HF_ACTIVATIONS, check_hf_layer_groups
from segatron_fairseq.modules.shared_layers import owners

from .huggingface_directory import layer_state, position_rows, tokenizer_files, warn_about_heads, write_directory
from .model_card import CheckpointFacts

_ACTIVATIONS = {ours: theirs for theirs, ours in HF_ACTIVATIONS.items()}


def is_albert(args) -> bool:
    """Whether the model's architecture options need ALBERT's class rather
    than BERT's (a factorized embedding or shared layers)."""
    factorized = getattr(args, "factorized_embed_dim", None) not in (None, 0, args.encoder_embed_dim)
    return factorized or (getattr(args, "share_encoder_layers", None) or "none") != "none"


def _groups(args) -> int:
    sharing = getattr(args, "share_encoder_layers", None) or "none"
    if sharing not in ("all", "none"):
        raise NotImplementedError(f"--share-encoder-layers {sharing}: ALBERT shares whole layers (all) or none")
    groups = (getattr(args, "encoder_layer_groups", None) or 1) if sharing == "all" else args.encoder_layers
    check_hf_layer_groups(args.encoder_layers, groups, "--encoder-layer-groups")
    return groups


def _check(model) -> None:
    args = model.args
    if model.encoder.segment_positions:
        raise NotImplementedError("a SegaBERT model with a factorized embedding or shared layers has no Hugging "
                                  "Face class (ALBERT's has no index tables); export its segabert_bert_* baseline")
    if getattr(args, "encoder_normalize_before", False):
        raise NotImplementedError("a pre-norm encoder (--encoder-normalize-before) has no ALBERT class")
    if args.activation_fn not in _ACTIVATIONS:
        raise NotImplementedError(f"--activation-fn {args.activation_fn} (ALBERT's: {', '.join(_ACTIVATIONS)})")


def _config(model, dictionary) -> Dict:
    args, encoder = model.args, model.encoder
    sentence_encoder = encoder.sentence_encoder
    return {"model_type": "albert", "architectures": ["AlbertForMaskedLM"], "vocab_size": len(dictionary),
            "embedding_size": sentence_encoder.embed_tokens.embedding_dim, "hidden_size": args.encoder_embed_dim,
            "num_hidden_layers": args.encoder_layers, "num_hidden_groups": _groups(args), "inner_group_num": 1,
            "num_attention_heads": args.encoder_attention_heads, "intermediate_size": args.encoder_ffn_embed_dim,
            "hidden_act": _ACTIVATIONS[args.activation_fn], "hidden_dropout_prob": args.dropout,
            "attention_probs_dropout_prob": args.attention_dropout, "classifier_dropout_prob": args.pooler_dropout,
            "layer_norm_eps": sentence_encoder.layernorm_embedding.eps, "max_position_embeddings": args.max_positions,
            "type_vocab_size": encoder.token_type_embeddings.num_embeddings if encoder.token_type_embeddings
            is not None else 2, "position_embedding_type": "absolute", "pad_token_id": dictionary.pad(),
            "bos_token_id": dictionary.bos(), "eos_token_id": dictionary.eos(),
            "tie_word_embeddings": not getattr(args, "untie_weights_roberta", False)}


def _state(model) -> Dict[str, Tensor]:
    ours, args = model.state_dict(), model.args
    sentence_encoder = model.encoder.sentence_encoder
    e, embeddings = "encoder.sentence_encoder.", "albert.embeddings."
    width = sentence_encoder.embed_tokens.embedding_dim
    token_types = ours.get("encoder.token_type_embeddings.weight")
    if token_types is None:
        token_types = ours[e + "embed_tokens.weight"].new_zeros(2, width)
    projection = sentence_encoder.embedding_projection
    mapping = ({"weight": projection.weight, "bias": projection.bias} if projection is not None else
               {"weight": torch.eye(width), "bias": torch.zeros(width)})
    state = {embeddings + "word_embeddings.weight": ours[e + "embed_tokens.weight"],
             embeddings + "position_embeddings.weight": position_rows(sentence_encoder),
             embeddings + "token_type_embeddings.weight": token_types,
             "predictions.decoder.weight": ours["encoder.lm_head.weight"],
             "predictions.bias": ours["encoder.lm_head.bias"], "predictions.decoder.bias": ours["encoder.lm_head.bias"],
             **{f"albert.encoder.embedding_hidden_mapping_in.{kind}": value for kind, value in mapping.items()}}
    for kind in ("weight", "bias"):
        state[embeddings + f"LayerNorm.{kind}"] = ours[e + f"layernorm_embedding.{kind}"]
        state[f"predictions.dense.{kind}"] = ours[f"encoder.lm_head.dense.{kind}"]
        state[f"predictions.LayerNorm.{kind}"] = ours[f"encoder.lm_head.layer_norm.{kind}"]
    for group, layer in enumerate(sorted(set(owners(args.encoder_layers, _groups(args))))):
        state.update(layer_state(ours, f"{e}layers.{layer}.",
                                 f"albert.encoder.albert_layer_groups.{group}.albert_layers.0.", ALBERT_LAYER_KEYS))
    return state


def export(model, dictionary, subwords, out_dir: str, facts: Optional[CheckpointFacts] = None) -> None:
    """Write ``out_dir`` (which must not exist): config.json, model.safetensors
    and the tokenizer files."""
    warn_about_heads(model)
    _check(model)
    config = _config(model, dictionary)
    files, copies = tokenizer_files(dictionary, subwords, config["max_position_embeddings"])
    write_directory(out_dir, config, _state(model), files, copies, facts)
