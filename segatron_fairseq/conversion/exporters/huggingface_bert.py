"""A ``segabert`` model as a Hugging Face directory: the BERT baseline
(``--no-segment-positions``) as a plain ``BertForMaskedLM``, SegaBERT as
``SegaBertForMaskedLM``, remote code shipped in the directory
(``hf_segabert/``), loaded with ``trust_remote_code=True``. The inverse of
``importers/bert.py``:

    E.embed_tokens / encoder.lm_head.weight  {p}.embeddings.word_embeddings / cls.predictions.decoder
    E.embed_positions (rows 2..)             bert.embeddings.position_embeddings (rows 0..)
    encoder.token_type_embeddings            {p}.embeddings.token_type_embeddings (zeros without one)
    encoder.segment_embeddings.*             segabert.embeddings.index_embeddings.*
    E.layers.N.self_attn.{q,k,v}_proj        {p}.encoder.layer.N.attention.self.{query,key,value}
    ...                                      (the rest of BERT's names)
The ids stay ours (``huggingface_directory.tokenizer_files``).
"""
import os
from typing import Dict, Optional

from torch import Tensor

from segatron_fairseq.conversion.bert_names import ACTIVATIONS

from .huggingface_directory import (
    INDEX_TOKENIZER_CLASS,
    index_tokenizer_files,
    layer_state,
    lm_head_state,
    position_rows,
    tokenizer_files,
    warn_about_heads,
    write_directory,
)
from .model_card import CheckpointFacts

REMOTE_CODE_DIR = os.path.join(os.path.dirname(__file__), "hf_segabert")
REMOTE_CODE_FILES = ("configuration_segabert.py", "modeling_segabert.py")


def _check(args) -> None:
    if getattr(args, "encoder_normalize_before", False):
        raise NotImplementedError("a pre-norm encoder (--encoder-normalize-before) has no BERT class")
    if getattr(args, "factorized_embed_dim", None) not in (None, 0, args.encoder_embed_dim):
        raise NotImplementedError(f"a factorized embedding (--factorized-embed-dim {args.factorized_embed_dim}) "
                                  "has no BERT class")
    if args.activation_fn not in ACTIVATIONS:
        raise NotImplementedError(f"--activation-fn {args.activation_fn} (BERT's: {', '.join(ACTIVATIONS)})")


def _config(model, dictionary, segabert: bool) -> Dict:
    args, encoder = model.args, model.encoder
    layer_norm = encoder.sentence_encoder.layernorm_embedding
    config = {"vocab_size": len(dictionary), "hidden_size": args.encoder_embed_dim,
              "num_hidden_layers": args.encoder_layers, "num_attention_heads": args.encoder_attention_heads,
              "intermediate_size": args.encoder_ffn_embed_dim, "hidden_act": args.activation_fn,
              "hidden_dropout_prob": args.dropout, "attention_probs_dropout_prob": args.attention_dropout,
              "layer_norm_eps": layer_norm.eps, "pad_token_id": dictionary.pad(),
              "max_position_embeddings": args.max_positions,
              "type_vocab_size": encoder.token_type_embeddings.num_embeddings if encoder.token_type_embeddings
              is not None else 2, "tie_word_embeddings": not getattr(args, "untie_weights_roberta", False)}
    if segabert:
        config.update(model_type="segabert", architectures=["SegaBertForMaskedLM"],
                      auto_map={"AutoConfig": "configuration_segabert.SegaBertConfig",
                                "AutoModel": "modeling_segabert.SegaBertModel",
                                "AutoModelForMaskedLM": "modeling_segabert.SegaBertForMaskedLM"},
                      **{f"max_{name}_index": table.num_embeddings
                         for name, table in encoder.segment_embeddings.items()})
    else:
        config.update(model_type="bert", architectures=["BertForMaskedLM"])
    return config


def _state(model, prefix: str, segabert: bool) -> Dict[str, Tensor]:
    ours = model.state_dict()
    e = "encoder.sentence_encoder."
    embeddings = f"{prefix}.embeddings."
    token_types = ours.get("encoder.token_type_embeddings.weight")
    if token_types is None:
        token_types = ours[e + "embed_tokens.weight"].new_zeros(2, model.args.encoder_embed_dim)
    state = {embeddings + "word_embeddings.weight": ours[e + "embed_tokens.weight"],
             embeddings + "token_type_embeddings.weight": token_types,
             embeddings + "LayerNorm.weight": ours[e + "layernorm_embedding.weight"],
             embeddings + "LayerNorm.bias": ours[e + "layernorm_embedding.bias"], **lm_head_state(ours)}
    if segabert:
        for name in model.encoder.segment_embeddings:
            state[embeddings + f"index_embeddings.{name}.weight"] = ours[f"encoder.segment_embeddings.{name}.weight"]
    else:
        state[embeddings + "position_embeddings.weight"] = position_rows(model.encoder.sentence_encoder)
    for layer in range(model.args.encoder_layers):
        state.update(layer_state(ours, f"{e}layers.{layer}.", f"{prefix}.encoder.layer.{layer}."))
    return state


def export(model, dictionary, subwords, out_dir: str, facts: Optional[CheckpointFacts] = None,
           text_encoder=None) -> None:
    """Write ``out_dir`` (which must not exist): config.json, model.safetensors,
    the tokenizer files and, for SegaBERT, the remote code. SegaBERT's
    tokenizer computes the indexes of raw text as ``text_encoder`` (the
    corpus's ``TextEncoder``, required for SegaBERT) does."""
    warn_about_heads(model)
    _check(model.args)
    segabert = model.encoder.segment_positions
    config = _config(model, dictionary, segabert)
    if segabert:
        sizes = {name: config[f"max_{name}_index"] for name in model.encoder.segment_embeddings}
        files, copies = index_tokenizer_files(dictionary, text_encoder, "encoder", config["max_position_embeddings"],
                                              sizes)
        copies.update({name: os.path.join(REMOTE_CODE_DIR, name) for name in REMOTE_CODE_FILES})
        config["tokenizer_class"] = INDEX_TOKENIZER_CLASS
    else:
        files, copies = tokenizer_files(dictionary, subwords, config["max_position_embeddings"])
    write_directory(out_dir, config, _state(model, "segabert" if segabert else "bert", segabert), files, copies, facts)
