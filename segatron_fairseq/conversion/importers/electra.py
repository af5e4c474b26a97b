"""Hugging Face ELECTRA as a ``segabert_electra`` checkpoint of the baseline
(``--no-segment-positions``): an ``ElectraForPreTraining`` directory (the
discriminator) and an ``ElectraForMaskedLM`` one (the generator).

Their state dicts -> ours (``importers/bert.py`` maps the embeddings and layers; E = sentence_encoder):
    electra.embeddings.*                      the shared embedding scope (encoder.E.embed_tokens, embed_positions,
                                              layernorm_embedding, encoder.token_type_embeddings)
    electra.embeddings_project (when E != H)  encoder.E.embedding_projection / generator.E.embedding_projection
    electra.encoder.layer.N.*                 encoder.E.layers.N.* / generator.E.layers.N.*
    discriminator_predictions.{dense,dense_prediction}   encoder.rtd_head.{dense,dense_prediction}
    generator_predictions.{dense,LayerNorm}   generator.lm_head.{dense,layer_norm}
    generator_lm_head (tied), .bias           the shared word table, generator.lm_head.bias
Each directory holds its own copy of the embeddings; ELECTRA trained them as
one. They are tied again here: the discriminator's are kept, and a generator
whose copy differs is named in a warning.
"""
import logging
from typing import Dict, List, Tuple

import torch
from torch import Tensor

from . import bert
from .wordpiece_vocabulary import MappedWordPiece

logger = logging.getLogger(__name__)

EMBEDDINGS = "electra.embeddings."
# config keys the two directories must agree on: the shared embeddings and what every layer reads
_SHARED_CONFIG = ("vocab_size", "embedding_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
                  "hidden_act")


def _as_bert(state: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """``electra.*`` renamed ``bert.*``, as ``importers/bert.py`` reads them."""
    return {"bert." + key[len("electra."):] if key.startswith("electra.") else key: value
            for key, value in state.items()}


def _arguments(discriminator: Dict, generator: Dict, source: str) -> List[str]:
    for key in _SHARED_CONFIG:
        if discriminator.get(key) != generator.get(key):
            raise ValueError(f"{source}: the generator's {key} is {generator.get(key)!r}, the discriminator's "
                             f"{discriminator.get(key)!r}; they share their embeddings")
    if discriminator["hidden_act"] != "gelu":  # the generator's head applies gelu whatever the config says
        raise NotImplementedError(f"{source}: hidden_act {discriminator['hidden_act']!r} (supported: gelu)")
    arguments = bert._arguments(discriminator, False, source)
    arguments[arguments.index("--arch") + 1] = "electra_base"
    arguments += ["--factorized-embed-dim", discriminator["embedding_size"],
                  "--generator-embed-dim", generator["hidden_size"],
                  "--generator-ffn-embed-dim", generator["intermediate_size"],
                  "--generator-attention-heads", generator["num_attention_heads"],
                  "--generator-layers", generator["num_hidden_layers"]]
    return [str(a) for a in arguments]


def _retie(discriminator: Dict[str, Tensor], generator: Dict[str, Tensor], source: str) -> None:
    """The discriminator's embeddings in ``generator`` too; a differing copy is warned about."""
    differing = []
    for key, value in discriminator.items():
        if key.startswith(EMBEDDINGS) and not key.endswith("position_ids"):
            if key not in generator or not torch.equal(generator[key], value):
                differing.append(key[len(EMBEDDINGS):])
            generator[key] = value
    if differing:
        logger.warning(f"{source}: the generator's embeddings differ from the discriminator's "
                       f"({', '.join(differing)}); the discriminator's are kept for both")


def _encoder_state(state: Dict[str, Tensor], config: Dict, ours: str) -> Dict[str, Tensor]:
    """One ELECTRA encoder's layers and projection under ``ours`` (``encoder.`` or ``generator.``)."""
    as_bert, converted = _as_bert(state), {}
    for layer in range(config["num_hidden_layers"]):
        for key, value in bert._layer_state(as_bert, layer).items():
            converted[ours + key[len("encoder."):]] = value
    for kind in ("weight", "bias"):
        projection = state.get(f"electra.embeddings_project.{kind}")
        if projection is not None:
            converted[f"{ours}sentence_encoder.embedding_projection.{kind}"] = projection
    return converted


def _discriminator_state(state: Dict[str, Tensor], config: Dict, vocabulary: MappedWordPiece,
                         source: str) -> Dict[str, Tensor]:
    """The shared embeddings (under both prefixes), the discriminator's layers and its head."""
    word = state[EMBEDDINGS + "word_embeddings.weight"]
    if word.size(0) != len(vocabulary.index):
        raise ValueError(f"{source}: {word.size(0)} word embeddings for a vocabulary of {len(vocabulary.index)}")
    positions = state[EMBEDDINGS + "position_embeddings.weight"]
    shared = {"sentence_encoder.embed_tokens.weight": bert.map_rows(word, vocabulary.index),
              "token_type_embeddings.weight": state[EMBEDDINGS + "token_type_embeddings.weight"],
              "sentence_encoder.embed_positions.weight": bert.fairseq_positions(positions)}
    for kind in ("weight", "bias"):
        shared[f"sentence_encoder.layernorm_embedding.{kind}"] = state[EMBEDDINGS + f"LayerNorm.{kind}"]
    converted = {prefix + key: value for prefix in ("encoder.", "generator.") for key, value in shared.items()}
    converted.update(_encoder_state(state, config, "encoder."))
    for name in ("dense", "dense_prediction"):
        for kind in ("weight", "bias"):
            converted[f"encoder.rtd_head.{name}.{kind}"] = state[f"discriminator_predictions.{name}.{kind}"]
    return converted


def _generator_state(state: Dict[str, Tensor], config: Dict, vocabulary: MappedWordPiece) -> Dict[str, Tensor]:
    """The generator's layers and masked-LM head (its word table is the shared one)."""
    converted = _encoder_state(state, config, "generator.")
    converted["generator.lm_head.bias"] = bert.map_rows(state["generator_lm_head.bias"], vocabulary.index)
    for kind in ("weight", "bias"):
        converted[f"generator.lm_head.dense.{kind}"] = state[f"generator_predictions.dense.{kind}"]
        converted[f"generator.lm_head.layer_norm.{kind}"] = state[f"generator_predictions.LayerNorm.{kind}"]
    return converted


def convert(discriminator: Tuple[Dict[str, Tensor], Dict, str, str],
            generator: Tuple[Dict[str, Tensor], Dict, str, str],
            vocabulary: MappedWordPiece) -> Tuple[List[str], Dict[str, Tensor]]:
    """Each of ``discriminator`` and ``generator``: (state dict, config.json,
    the weights' path, the config's path). Returns the fairseq-train
    arguments (task ``segabert_mlm``) and our state dict."""
    d_state, d_config, d_source, d_config_path = discriminator
    g_state, g_config, g_source, g_config_path = generator
    try:
        arguments = _arguments(d_config, g_config, g_config_path)
    except KeyError as err:
        raise ValueError(f"{d_config_path} or {g_config_path}: no {err.args[0]}") from None
    _retie(d_state, g_state, g_source)
    converted = {}
    for source, part in ((d_source, lambda: _discriminator_state(d_state, d_config, vocabulary, d_source)),
                         (g_source, lambda: _generator_state(g_state, g_config, vocabulary))):
        try:
            converted.update(part())
        except KeyError as err:
            raise ValueError(f"{source}: no {err.args[0]} (not an ELECTRA model of this layout)") from None
    converted["generator.lm_head.weight"] = converted["encoder.sentence_encoder.embed_tokens.weight"]
    return arguments, {key: value.float() for key, value in converted.items()}
