"""Hugging Face's ``AlbertForMaskedLM`` / ``AlbertForPreTraining`` as a
``segabert`` checkpoint without index tables (``--no-segment-positions``,
architecture ``albert_base`` sized by the config): factorized
embedding, cross-layer sharing by groups, and, with AlbertForPreTraining's
sentence-order classifier, the task's ``sentence_order`` head.

Their state dict -> ours (E = encoder.sentence_encoder; g: group, N: the first
layer of group g, floor(N * G / L) = g; the other layers of a group share N's
weights and are not stored):
    albert.embeddings.word_embeddings        E.embed_tokens and encoder.lm_head.weight (tied; rows mapped)
    albert.embeddings.position_embeddings    E.embed_positions, rows shifted by 2 (as BERT's)
    albert.embeddings.token_type_embeddings  encoder.token_type_embeddings
    albert.embeddings.LayerNorm              E.layernorm_embedding
    albert.encoder.embedding_hidden_mapping_in  E.embedding_projection
    albert.encoder.albert_layer_groups.g.albert_layers.0.*   E.layers.N.* (``bert_names.ALBERT_LAYER_KEYS``)
    predictions.{dense,LayerNorm}, .bias     encoder.lm_head.{dense,layer_norm}, .bias
    albert.pooler, sop_classifier.classifier classification_heads.sentence_order.{dense,out_proj}
"""
from typing import Dict, List, Tuple

from torch import Tensor

from segatron_fairseq.conversion.bert_names import (
    ALBERT_LAYER_KEYS,
    ALBERT_SPECIAL_NAMES,
    HF_ACTIVATIONS,
    check_hf_layer_groups,
)
from segatron_fairseq.modules.shared_layers import owners

from .bert import convert_naming_missing_keys, fairseq_positions, map_rows
from .wordpiece_vocabulary import MappedWordPiece, map_wordpiece


def map_albert_vocabulary(pieces: List[str], source: str) -> MappedWordPiece:
    """ALBERT's pieces (<pad> <unk> [CLS] [SEP] [MASK] ...) as a fairseq
    dictionary, mapped as BERT's WordPiece vocabulary is."""
    return map_wordpiece([ALBERT_SPECIAL_NAMES.get(piece, piece) for piece in pieces], source)


def _arguments(config: Dict, sop: bool, source: str) -> List[str]:
    activation = HF_ACTIVATIONS.get(config.get("hidden_act"))
    if activation is None:
        raise NotImplementedError(f"{source}: hidden_act {config.get('hidden_act')!r} "
                                  f"(supported: {', '.join(HF_ACTIVATIONS)})")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise NotImplementedError(f"{source}: position_embedding_type {config['position_embedding_type']!r}")
    if config.get("inner_group_num", 1) != 1:
        raise NotImplementedError(f"{source}: inner_group_num {config['inner_group_num']} (supported: 1, "
                                  "one layer per group)")
    check_hf_layer_groups(config["num_hidden_layers"], config["num_hidden_groups"], source)
    if config["embedding_size"] == config["hidden_size"]:
        raise NotImplementedError(f"{source}: embedding_size equals hidden_size; ALBERT's projection between "
                                  "them has no place in an unfactorized model")
    max_positions = config["max_position_embeddings"]
    arguments = ["--arch", "albert_base", "--encoder-layers", config["num_hidden_layers"],
                 "--encoder-embed-dim", config["hidden_size"], "--factorized-embed-dim", config["embedding_size"],
                 "--encoder-ffn-embed-dim", config["intermediate_size"],
                 "--encoder-attention-heads", config["num_attention_heads"], "--activation-fn", activation,
                 "--share-encoder-layers", "all", "--encoder-layer-groups", config["num_hidden_groups"],
                 "--dropout", config["hidden_dropout_prob"], "--attention-dropout",
                 config["attention_probs_dropout_prob"], "--activation-dropout", 0.0, "--pooler-dropout",
                 config.get("classifier_dropout_prob", 0.1), "--layer-norm-eps", config["layer_norm_eps"],
                 "--num-token-types", config["type_vocab_size"], "--max-positions", max_positions,
                 "--tokens-per-sample", max_positions]
    if sop:
        arguments.append("--sentence-order-prediction")
    return [str(a) for a in arguments]


def has_sentence_order_head(state: Dict[str, Tensor]) -> bool:
    return "sop_classifier.classifier.weight" in state


def convert(state: Dict[str, Tensor], config: Dict, vocabulary: MappedWordPiece, source: str,
            config_source: str) -> Tuple[List[str], Dict[str, Tensor]]:
    """``state``: their state dict (read from ``source``); ``config``: their
    config.json (``config_source``). Returns the fairseq-train arguments (task
    ``segabert_mlm``) and our state dict."""
    return convert_naming_missing_keys(lambda: _arguments(config, has_sentence_order_head(state), config_source),
                                       lambda: _convert(state, config, vocabulary, source), config_source, source,
                                       "an ALBERT masked LM")


def _convert(state, config, vocabulary, source):
    untied = []
    embeddings = "albert.embeddings."
    word = state[embeddings + "word_embeddings.weight"]
    if word.size(0) != len(vocabulary.index):
        raise ValueError(f"{source}: {word.size(0)} word embeddings for a vocabulary of {len(vocabulary.index)}")
    decoder = state.get("predictions.decoder.weight", word)
    if decoder.data_ptr() != word.data_ptr() and not decoder.equal(word):
        untied.append("--untie-weights-roberta")
    prefix = "encoder.sentence_encoder."
    positions = state[embeddings + "position_embeddings.weight"]
    converted = {prefix + "embed_tokens.weight": map_rows(word, vocabulary.index),
                 "encoder.lm_head.weight": map_rows(decoder, vocabulary.index),
                 "encoder.lm_head.bias": map_rows(state["predictions.bias"], vocabulary.index),
                 "encoder.token_type_embeddings.weight": state[embeddings + "token_type_embeddings.weight"],
                 prefix + "embed_positions.weight": fairseq_positions(positions)}
    for kind in ("weight", "bias"):
        converted[prefix + f"layernorm_embedding.{kind}"] = state[embeddings + f"LayerNorm.{kind}"]
        converted[prefix + f"embedding_projection.{kind}"] = state[
            f"albert.encoder.embedding_hidden_mapping_in.{kind}"]
        converted[f"encoder.lm_head.dense.{kind}"] = state[f"predictions.dense.{kind}"]
        converted[f"encoder.lm_head.layer_norm.{kind}"] = state[f"predictions.LayerNorm.{kind}"]
        if has_sentence_order_head(state):
            head = "classification_heads.sentence_order."
            converted[head + f"dense.{kind}"] = state[f"albert.pooler.{kind}"]
            converted[head + f"out_proj.{kind}"] = state[f"sop_classifier.classifier.{kind}"]
    first_layers = sorted(set(owners(config["num_hidden_layers"], config["num_hidden_groups"])))
    for group, layer in enumerate(first_layers):
        theirs = f"albert.encoder.albert_layer_groups.{group}.albert_layers.0."
        for ours, their_name in ALBERT_LAYER_KEYS.items():
            for kind in ("weight", "bias"):
                converted[f"{prefix}layers.{layer}.{ours}.{kind}"] = state[f"{theirs}{their_name}.{kind}"]
    return untied, {key: value.float() for key, value in converted.items()}

