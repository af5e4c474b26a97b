"""Hugging Face's ``XLNetLMHeadModel`` (or a bare ``XLNetModel``) as an
``xlnet`` checkpoint with ``--positions token`` for the task ``xlnet_plm``.

The weights map as ``conversion/xlnet_names.py`` says; the vocabulary is the
directory's ``spiece.model``: XLNet's pieces ``<unk> <s> </s> <cls> <sep>
<pad> <mask> <eod> <eop> ...`` become a fairseq dictionary with ``<s> <pad>
</s> <unk>`` at fairseq's ids 0..3 and every other piece (``<cls>``,
``<sep>``, ``<mask>``, ... included, as ordinary symbols) in the model's order
after them; the word embedding's and ``lm_loss.bias``'s rows move with them.

The config's settings that our layer does not implement are refused
(``attn_type`` other than ``bi``, ``bi_data``, an ``ff_activation`` other
than ``gelu``, a ``layer_norm_eps`` other than 1e-12, an output layer not
tied to the embedding). A bare ``XLNetModel`` has no ``lm_loss.bias``: the
output bias starts at zero (a warning says so); weights of other heads
(``sequence_summary``, ``logits_proj``, ...) are left out with a warning.
"""
import logging
import os
from typing import Dict, List, Tuple

import torch
from torch import Tensor

from segatron_fairseq.conversion.xlnet_names import PREFIX, biases_differ_across_layers, our_state
from segatron_fairseq.models.xlnet import POSITION_KINDS

from .bert import convert_naming_missing_keys, map_rows
from .wordpiece_vocabulary import MappedWordPiece, map_wordpiece

logger = logging.getLogger(__name__)

# fairseq's special symbols -> XLNet's pieces (spelled alike)
XLNET_SPECIAL_NAMES = {"<s>": "<s>", "<pad>": "<pad>", "</s>": "</s>", "<unk>": "<unk>"}
LAYER_NORM_EPS = 1e-12  # modules/xlnet_layer.py's
ACTIVATION = "gelu"  # modules/xlnet_layer.py's (exact) nn.GELU


def map_xlnet_vocabulary(pieces: List[str], source: str) -> MappedWordPiece:
    """XLNet's sentencepiece pieces (``pieces`` in id order, read from
    ``source``) as a fairseq dictionary; ``index`` (n_pieces,): their id -> ours."""
    return map_wordpiece(pieces, source, XLNET_SPECIAL_NAMES, "XLNet's")


def _arguments(config: Dict, source: str) -> List[str]:
    """fairseq-train's model arguments for ``config`` (their config.json, read from ``source``)."""
    refused = {"attn_type": (config.get("attn_type", "bi") != "bi", "only bidirectional attention (bi) is built"),
               "bi_data": (bool(config.get("bi_data", False)), "XLNet's backward-position half of the batch is "
                                                                "not built"),
               "ff_activation": (config.get("ff_activation", ACTIVATION) != ACTIVATION,
                                 f"the feed-forward layer's activation is {ACTIVATION}"),
               "layer_norm_eps": (config.get("layer_norm_eps", LAYER_NORM_EPS) != LAYER_NORM_EPS,
                                  f"the LayerNorms' epsilon is {LAYER_NORM_EPS}")}
    for key, (refuse, why) in refused.items():
        if refuse:
            raise NotImplementedError(f"{source}: {key} {config[key]!r} ({why})")
    # the criterion recorded so that fairseq-validate scores the checkpoint as a trained one
    arguments = ["--arch", "xlnet_base", "--criterion", "xlnet_plm", "--positions", "token",
                 "--encoder-layers", config["n_layer"], "--encoder-embed-dim", config["d_model"],
                 "--encoder-attention-heads", config["n_head"], "--encoder-head-dim", config["d_head"],
                 "--encoder-ffn-embed-dim", config["d_inner"], "--dropout", config["dropout"],
                 "--attention-dropout", config["dropout"], "--clamp-len", config.get("clamp_len", -1)]
    if config.get("mem_len"):  # null (keep every state, as the released configs): xlnet_base's 384
        arguments += ["--mem-len", config["mem_len"]]
    return [str(a) for a in arguments]


def _with_lm_head(state: Dict[str, Tensor], source: str) -> Dict[str, Tensor]:
    """``state`` under XLNetLMHeadModel's names: a bare XLNetModel's keys get
    ``transformer.`` and a zero ``lm_loss.bias``; an untied output layer is refused."""
    if not any(key.startswith(PREFIX) for key in state):
        state = {PREFIX + key: value for key, value in state.items()}
    embeddings = state.get(PREFIX + "word_embedding.weight")
    if "lm_loss.bias" not in state and embeddings is not None:
        logger.warning(f"{source}: no lm_loss.bias (an XLNetModel without its LM head): the output bias starts "
                       "at zero")
        state = {**state, "lm_loss.bias": embeddings.new_zeros(embeddings.size(0))}
    output = state.get("lm_loss.weight")
    if output is not None and embeddings is not None and not torch.equal(output, embeddings):
        raise NotImplementedError(f"{source}: lm_loss.weight differs from the word embedding (our XLNet's output "
                                  "layer is tied to it)")
    left_out = sorted({key.split(".")[0] for key in state if not key.startswith(PREFIX)} - {"lm_loss"})
    if left_out:
        logger.warning(f"{source}: {', '.join(left_out)} (heads of another XLNet class) are not imported")
    return state


def convert(state: Dict[str, Tensor], config: Dict, vocabulary: MappedWordPiece, source: str,
            config_source: str) -> Tuple[List[str], Dict[str, Tensor]]:
    """``state``: their state dict (read from ``source``); ``config``: their
    config.json (``config_source``). Returns the fairseq-train arguments (task
    ``xlnet_plm``) and our state dict."""
    state = _with_lm_head(state, source)
    return convert_naming_missing_keys(lambda: _arguments(config, config_source),
                                       lambda: _convert(state, config, vocabulary, source, config_source),
                                       config_source, source, "an XLNet model")


def _convert(state, config, vocabulary, source, config_source):
    """The arguments the weights add (``--tie-position-biases``) and our state dict."""
    word = state[PREFIX + "word_embedding.weight"]
    if word.size(0) != len(vocabulary.index):
        raise ValueError(f"{source}: {word.size(0)} word embeddings, but "
                         f"{os.path.join(os.path.dirname(source), 'spiece.model')} has {len(vocabulary.index)} pieces "
                         f"(the weights and the sentencepiece model of different models?)")
    layers = {key.split(".")[2] for key in state if key.startswith(PREFIX + "layer.")}
    if len(layers) != config["n_layer"]:
        raise ValueError(f"{source}: {len(layers)} layers; {config_source} says n_layer {config['n_layer']}")
    # Hugging Face's PyTorch XLNet runs each layer's biases whatever untie_r says: tie only what is one set
    tie = not config.get("untie_r", True) and not biases_differ_across_layers(state)
    if not config.get("untie_r", True) and not tie:
        logger.warning(f"{source}: untie_r is false but the layers' biases differ; each layer keeps its own, as "
                       "Hugging Face's model runs them")
    converted = our_state(state, tie)
    converted["embed_tokens.weight"] = map_rows(word, vocabulary.index)
    converted["output_bias"] = map_rows(converted["output_bias"], vocabulary.index)
    converted = {key: value.float() for key, value in converted.items()}
    converted["relative_positions"] = torch.tensor(POSITION_KINDS.index("token"))  # what the model records
    return ["--tie-position-biases"] if tie else [], converted
