"""BERT-layout masked LMs as ``segabert`` checkpoints: Hugging Face's
``BertForMaskedLM`` (into BERT, ``--no-segment-positions``) and the Segatron
authors' fork ``SegaBertForMaskedLM`` (into SegaBERT).

Their state dict -> ours (N: layer; E = encoder.sentence_encoder):
    bert.embeddings.word_embeddings        E.embed_tokens and encoder.lm_head.weight (tied; rows mapped)
    bert.embeddings.position_embeddings    E.embed_positions, rows shifted by 2 (fairseq's positions
                                           start after the padding index); unused by SegaBERT
    bert.embeddings.token_type_embeddings  encoder.token_type_embeddings
    ...{para,sent,token}_position_embeddings  encoder.segment_embeddings.{paragraph,sentence,token}
    bert.embeddings.LayerNorm              E.layernorm_embedding
    ...N.attention.self.{query,key,value}  E.layers.N.self_attn.{q,k,v}_proj
    ...N.attention.self.query_key_value    the same, q, k, v stacked (their fork)
    ...N.attention.output.dense            E.layers.N.self_attn.out_proj
    ...N.attention.output.LayerNorm        E.layers.N.self_attn_layer_norm
    ...N.intermediate.dense / output.dense E.layers.N.fc1 / fc2
    ...N.output.LayerNorm                  E.layers.N.final_layer_norm
    cls.predictions.transform.{dense,LayerNorm}, .bias   encoder.lm_head.{dense,layer_norm}, .bias
The pooler (and an NSP head) has no counterpart: fine-tuning adds its own
classification heads. Every LayerNorm keeps BERT's epsilon (``--layer-norm-eps``).

SpanBERT's released checkpoints (``hf-spanbert``) are BERT directories without
the MLM and SBO heads: a ``BertModel`` (keys without ``bert.``) or a
``BertForPreTraining`` whose ``cls.predictions`` is imported when present
(``cls.seq_relationship``, NSP, is not). Without it the MLM head is fresh
(``fresh_mlm_head``: dense N(0, 0.02), LayerNorm 1 / 0, bias 0, decoder tied
to the word embeddings), to be trained before its predictions mean anything.
"""
from typing import Callable, Dict, List, Tuple

import torch
from torch import Tensor

from segatron_fairseq.conversion.bert_names import ACTIVATIONS, ENCODER_LAYER_KEYS

from .wordpiece_vocabulary import MappedWordPiece

_SEGMENT_TABLES = {"paragraph": "para_position", "sentence": "sent_position", "token": "token_position"}
_QKV = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")


def is_segabert(state: Dict[str, Tensor]) -> bool:
    return "bert.embeddings.token_position_embeddings.weight" in state


def with_bert_prefix(state: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """A ``BertModel`` state dict (``embeddings.*``, ``encoder.*``,
    ``pooler.*``) under ``bert.`` as ``BertFor*`` models save it; others as they are."""
    if "embeddings.word_embeddings.weight" not in state:
        return state
    return {("bert." + key if key.split(".")[0] in ("embeddings", "encoder", "pooler") else key): value
            for key, value in state.items()}


def _fresh_mlm_head(hidden: int, vocabulary_size: int) -> Dict[str, Tensor]:
    """BERT's initial MLM head (``cls.predictions.*`` names), drawn with seed 0."""
    generator = torch.Generator().manual_seed(0)
    return {"cls.predictions.transform.dense.weight": torch.randn(hidden, hidden, generator=generator) * 0.02,
            "cls.predictions.transform.dense.bias": torch.zeros(hidden),
            "cls.predictions.transform.LayerNorm.weight": torch.ones(hidden),
            "cls.predictions.transform.LayerNorm.bias": torch.zeros(hidden),
            "cls.predictions.bias": torch.zeros(vocabulary_size)}


def _arguments(config: Dict, segabert: bool, source: str) -> List[str]:
    activation = config.get("hidden_act")
    if activation not in ACTIVATIONS:
        raise NotImplementedError(f"{source}: hidden_act {activation!r} (supported: {', '.join(ACTIVATIONS)})")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise NotImplementedError(f"{source}: position_embedding_type {config['position_embedding_type']!r}")
    max_positions = config["max_position_embeddings"]
    arguments = ["--arch", "segabert_base" if segabert else "segabert_bert_base",
                 "--encoder-layers", config["num_hidden_layers"], "--encoder-embed-dim", config["hidden_size"],
                 "--encoder-ffn-embed-dim", config["intermediate_size"],
                 "--encoder-attention-heads", config["num_attention_heads"], "--activation-fn", activation,
                 "--dropout", config["hidden_dropout_prob"], "--attention-dropout",
                 config["attention_probs_dropout_prob"], "--activation-dropout", 0.0, "--pooler-dropout",
                 config["hidden_dropout_prob"], "--layer-norm-eps", config["layer_norm_eps"],
                 "--num-token-types", config["type_vocab_size"], "--max-positions", max_positions,
                 "--tokens-per-sample", max_positions]
    if segabert:
        for ours, theirs in _SEGMENT_TABLES.items():
            arguments += [f"--max-{ours}-index", config[f"max_{theirs.split('_')[0]}_position_embeddings"]]
    return [str(a) for a in arguments]


def map_rows(rows: Tensor, index: Tensor) -> Tensor:
    """Their table's rows (one per id) at our ids (``index``: their id -> ours)."""
    table = rows.new_zeros(rows.shape)
    table[index] = rows
    return table


def fairseq_positions(positions: Tensor) -> Tensor:
    """Their learned position table with the 2 rows fairseq's learned
    positions skip (they start after the padding index)."""
    return torch.cat([positions.new_zeros(2, positions.size(1)), positions])


def _layer_state(state: Dict[str, Tensor], layer: int) -> Dict[str, Tensor]:
    theirs, ours = f"bert.encoder.layer.{layer}.", f"encoder.sentence_encoder.layers.{layer}."
    converted = {}
    for kind in ("weight", "bias"):
        fused = theirs + f"attention.self.query_key_value.{kind}"  # their fork: q, k, v stacked
        if fused in state:
            converted.update({ours + f"{name}.{kind}": value for name, value in zip(_QKV, state[fused].chunk(3))})
        for our_name, their_name in ENCODER_LAYER_KEYS.items():
            if not (fused in state and our_name in _QKV):
                converted[ours + f"{our_name}.{kind}"] = state[theirs + f"{their_name}.{kind}"]
    return converted


def convert(state: Dict[str, Tensor], config: Dict, vocabulary: MappedWordPiece, source: str,
            config_source: str, fresh_mlm_head: bool = False) -> Tuple[List[str], Dict[str, Tensor]]:
    """``state``: their state dict (read from ``source``); ``config``: their
    config.json (``config_source``). Returns the fairseq-train arguments (task
    ``segabert_mlm``) and our state dict. ``fresh_mlm_head``: a state without
    ``cls.predictions`` gets BERT's initial MLM head (SpanBERT's releases)."""
    if fresh_mlm_head and "cls.predictions.bias" not in state:
        word = state.get("bert.embeddings.word_embeddings.weight")
        if word is not None:
            state = {**state, **_fresh_mlm_head(word.size(1), word.size(0))}
    return convert_naming_missing_keys(lambda: _arguments(config, is_segabert(state), config_source),
                                       lambda: _convert(state, config, vocabulary, source), config_source, source,
                                       "a BERT masked LM")


def convert_naming_missing_keys(arguments_of: Callable[[], List[str]],
                                state_of: Callable[[], Tuple[List[str], Dict[str, Tensor]]],
                                config_source: str, source: str, kind: str) -> Tuple[List[str], Dict[str, Tensor]]:
    """``arguments_of()`` (from the config) + the arguments and state dict of
    ``state_of()``, a key missing from either named with its file."""
    try:
        arguments = arguments_of()
    except KeyError as err:
        raise ValueError(f"{config_source}: no {err.args[0]}") from None
    try:
        untied, converted = state_of()
    except KeyError as err:
        raise ValueError(f"{source}: no {err.args[0]} (not {kind} of this layout)") from None
    return arguments + untied, converted


def _convert(state, config, vocabulary, source):
    """The arguments the state dict adds, and our state dict."""
    segabert = is_segabert(state)
    untied = []
    word = state["bert.embeddings.word_embeddings.weight"]
    if word.size(0) != len(vocabulary.index):
        raise ValueError(f"{source}: {word.size(0)} word embeddings for a vocabulary of {len(vocabulary.index)}")
    decoder = state.get("cls.predictions.decoder.weight", word)
    if not torch.equal(decoder, word):
        untied.append("--untie-weights-roberta")

    def mapped(rows: Tensor) -> Tensor:
        return map_rows(rows, vocabulary.index)

    prefix = "encoder.sentence_encoder."
    converted = {prefix + "embed_tokens.weight": mapped(word), "encoder.lm_head.weight": mapped(decoder),
                 "encoder.lm_head.bias": mapped(state["cls.predictions.bias"]),
                 "encoder.token_type_embeddings.weight": state["bert.embeddings.token_type_embeddings.weight"],
                 prefix + "layernorm_embedding.weight": state["bert.embeddings.LayerNorm.weight"],
                 prefix + "layernorm_embedding.bias": state["bert.embeddings.LayerNorm.bias"]}
    for kind in ("weight", "bias"):
        converted[f"encoder.lm_head.dense.{kind}"] = state[f"cls.predictions.transform.dense.{kind}"]
        converted[f"encoder.lm_head.layer_norm.{kind}"] = state[f"cls.predictions.transform.LayerNorm.{kind}"]
    if segabert:
        for ours, theirs in _SEGMENT_TABLES.items():
            table = state[f"bert.embeddings.{theirs}_embeddings.weight"]
            converted[f"encoder.segment_embeddings.{ours}.weight"] = table
    else:
        positions = state["bert.embeddings.position_embeddings.weight"]
        converted[prefix + "embed_positions.weight"] = fairseq_positions(positions)
    for layer in range(config["num_hidden_layers"]):
        converted.update(_layer_state(state, layer))
    return untied, {key: value.float() for key, value in converted.items()}
