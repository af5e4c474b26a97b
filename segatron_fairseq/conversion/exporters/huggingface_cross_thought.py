"""A ``cross_thought`` model as a Hugging Face directory: ``CrossThoughtForMaskedLM``
(remote code shipped in the directory, ``hf_cross_thought/``), loaded with
``trust_remote_code=True``; ``encode`` gives the special-token states.

    E.embed_tokens / encoder.special_embeddings / encoder.positions
                                  cross_thought.{word,special,position}_embeddings
    E.layernorm_embedding         cross_thought.LayerNorm
    E.layers.N                    cross_thought.encoder.layer.N (BertLayer names)
    encoder.cross_layers.g.k      cross_thought.cross_layers.g.k (BertLayer names)
    encoder.final_layer           cross_thought.final_layer
    encoder.lm_head               cls.predictions
(E = encoder.sentence_encoder). Words take positions N..N+L-1: the offset of
training is 0, as in our evaluation. The tokenizer gives a text's sub-words
alone (``SegmentIndexTokenizer``'s ``sequence`` layout). Pair classification
heads are not exported.
"""
import os
from typing import Dict, Optional

from torch import Tensor

from .huggingface_directory import (
    INDEX_TOKENIZER_CLASS,
    index_tokenizer_files,
    layer_state,
    lm_head_state,
    warn_about_heads,
    write_directory,
)
from .model_card import CheckpointFacts

REMOTE_CODE_DIR = os.path.join(os.path.dirname(__file__), "hf_cross_thought")
REMOTE_CODE_FILES = ("configuration_cross_thought.py", "modeling_cross_thought.py")
CROSS_LAYER_KEYS = {"attention.q_proj": "attention.self.query", "attention.k_proj": "attention.self.key",
                    "attention.v_proj": "attention.self.value", "attention.out_proj": "attention.output.dense",
                    "attention_norm": "attention.output.LayerNorm", "ffn.0": "intermediate.dense",
                    "ffn.3": "output.dense", "ffn_norm": "output.LayerNorm"}


def _config(model, dictionary) -> Dict:
    args = model.args
    if args.activation_fn != "gelu":
        raise NotImplementedError(f"--activation-fn {args.activation_fn}: the cross-sequence layers are GELU, "
                                  "and the exported layers share one activation")
    if getattr(args, "encoder_normalize_before", False):
        raise NotImplementedError("a pre-norm encoder (--encoder-normalize-before) has no BERT layers")
    return {"model_type": "cross_thought", "architectures": ["CrossThoughtForMaskedLM"],
            "auto_map": {"AutoConfig": "configuration_cross_thought.CrossThoughtConfig",
                         "AutoModel": "modeling_cross_thought.CrossThoughtModel",
                         "AutoModelForMaskedLM": "modeling_cross_thought.CrossThoughtForMaskedLM"},
            "vocab_size": len(dictionary), "hidden_size": args.encoder_embed_dim,
            "num_hidden_layers": args.encoder_layers, "num_attention_heads": args.encoder_attention_heads,
            "intermediate_size": args.encoder_ffn_embed_dim, "hidden_act": "gelu",
            "hidden_dropout_prob": args.dropout, "attention_probs_dropout_prob": args.attention_dropout,
            "layer_norm_eps": model.encoder.sentence_encoder.layernorm_embedding.eps,
            "pad_token_id": dictionary.pad(), "max_position_embeddings": args.max_positions,
            "tie_word_embeddings": not getattr(args, "untie_weights_roberta", False),
            "num_special_tokens": args.num_special_tokens, "shared_special_embedding": args.shared_special_embedding,
            "cross_layers": args.cross_layers, "share_cross_layers": args.share_cross_layers,
            "cross_mask_self": args.cross_mask_self, "no_cross_layer": args.no_cross_layer}


def _state(model) -> Dict[str, Tensor]:
    ours = model.state_dict()
    e, p = "encoder.sentence_encoder.", "cross_thought."
    state = {p + "word_embeddings.weight": ours[e + "embed_tokens.weight"],
             p + "special_embeddings.weight": ours["encoder.special_embeddings.weight"],
             p + "position_embeddings.weight": ours["encoder.positions.weight"],
             p + "LayerNorm.weight": ours[e + "layernorm_embedding.weight"],
             p + "LayerNorm.bias": ours[e + "layernorm_embedding.bias"], **lm_head_state(ours),
             **layer_state(ours, "encoder.final_layer.", p + "final_layer.")}
    for layer in range(model.args.encoder_layers):
        state.update(layer_state(ours, f"{e}layers.{layer}.", f"{p}encoder.layer.{layer}."))
    if not model.args.no_cross_layer:
        for group, layers in enumerate(model.encoder.cross_layers):
            for k in range(len(layers)):
                state.update(layer_state(ours, f"encoder.cross_layers.{group}.{k}.",
                                         f"{p}cross_layers.{group}.{k}.", CROSS_LAYER_KEYS))
    return state


def export(model, dictionary, text_encoder, out_dir: str, facts: Optional[CheckpointFacts] = None) -> None:
    """Write ``out_dir`` (which must not exist) with the tokenizer of ``text_encoder`` (the corpus's
    ``TextEncoder``): each text one sequence of its sub-words, as the hub's ``encode`` reads it."""
    warn_about_heads(model)
    config = {**_config(model, dictionary), "tokenizer_class": INDEX_TOKENIZER_CLASS}
    files, copies = index_tokenizer_files(dictionary, text_encoder, "sequence",
                                          config["max_position_embeddings"] - config["num_special_tokens"])
    copies.update({name: os.path.join(REMOTE_CODE_DIR, name) for name in REMOTE_CODE_FILES})
    write_directory(out_dir, config, _state(model), files, copies, facts)
