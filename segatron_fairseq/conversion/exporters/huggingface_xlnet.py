"""Our ``xlnet`` with ``--positions token`` as Hugging Face's plain
``XLNetLMHeadModel`` (no remote code). The inverse of
``importers/huggingface_xlnet.py``; the weights map as
``conversion/xlnet_names.py`` says. ``--positions segatron`` has no Hugging
Face class (XLNet's has token distances only) and is refused.

The vocabulary, when the corpus has a sentencepiece model, is that model's:
id p is its piece p (so ``XLNetTokenizer`` on the copied ``spiece.model`` gives
the model's ids), then the dictionary's symbols that are no piece (fairseq's
``<s> <pad> </s>`` when the model lacks them, ``madeupword`` padding), in
dict.txt's order, at the ids after the pieces (``added_tokens_decoder``). A
piece the dictionary lacks (our text encoder reads it as ``<unk>``) takes
``<unk>``'s embedding and a bias of ``ABSENT_PIECE_BIAS``, so it gets no
probability; so do the symbols a fine-tuning task appended to the
pre-training dictionary (``<mask>``: never a target), exported after the
pieces as the other symbols. A model imported by ``segatron-import hf-xlnet`` has every piece
and no other symbol: its export is the directory it came from. Without a
sentencepiece model (whitespace words, WordPiece) the ids are dict.txt's and
no tokenizer is written.
"""
import json
import logging
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor

from segatron_fairseq.conversion.importers.huggingface_xlnet import ACTIVATION, LAYER_NORM_EPS
from segatron_fairseq.conversion.importers.sentencepiece_vocabulary import read_sentencepiece_vocab
from segatron_fairseq.conversion.xlnet_names import PREFIX, huggingface_state

from .huggingface_directory import warn_about_heads, write_directory
from .model_card import CheckpointFacts

logger = logging.getLogger(__name__)

ABSENT_PIECE_BIAS = -1e4  # a logit of about -1e4: probability 0 in float32 and float16 alike
# XLNetTokenizer's special tokens, spelled as XLNet's spiece.model spells them
TOKENIZER_SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "<sep>",
                      "pad_token": "<pad>", "cls_token": "<cls>", "mask_token": "<mask>"}
ADDITIONAL_SPECIALS = ("<eop>", "<eod>")


def _check(model) -> None:
    cfg = model.cfg
    if cfg.positions != "token":
        raise NotImplementedError(f"--positions {cfg.positions}: no Hugging Face class has XLNet with Segatron's "
                                  "sentence and paragraph distances (XLNetLMHeadModel has token distances only); "
                                  "export a --positions token model")
    if cfg.encoder_attention_heads * cfg.encoder_head_dim != cfg.encoder_embed_dim:
        raise NotImplementedError(f"{cfg.encoder_attention_heads} heads of {cfg.encoder_head_dim} for width "
                                  f"{cfg.encoder_embed_dim}: Hugging Face's XLNetConfig needs heads x head width "
                                  "= width")
    if cfg.attention_dropout != cfg.dropout:
        logger.warning(f"--attention-dropout {cfg.attention_dropout} differs from --dropout {cfg.dropout}: Hugging "
                       "Face's XLNet has one dropout, written as --dropout's")


def exported_symbols(dictionary, subwords) -> Tuple[List[str], List[str]]:
    """The exported vocabulary in id order, and the pieces of the corpus's
    sentencepiece model (empty without one) that open it (see the module doc)."""
    from segatron_preprocess.subwords import SentencePiece

    if not isinstance(subwords, SentencePiece):
        return list(dictionary.symbols), []
    pieces = read_sentencepiece_vocab(subwords.model_path)
    known = set(pieces)
    return pieces + [symbol for symbol in dictionary.symbols if symbol not in known], pieces


def _tokenizer_files(symbols: List[str], pieces: List[str], subwords) -> Tuple[Dict[str, str], Dict[str, str]]:
    """tokenizer_config.json (XLNetTokenizer, the symbols after the pieces as
    added tokens at their ids) and the copied spiece.model; none without pieces."""
    if not pieces:
        logger.warning("the corpus has no sentencepiece model: no tokenizer is written, and the ids are dict.txt's")
        return {}, {}
    added = {str(i): {"content": symbol, "lstrip": False, "rstrip": False, "normalized": False,
                      "single_word": False, "special": True}
             for i, symbol in enumerate(symbols) if i >= len(pieces)}
    present = set(symbols)
    config = {"tokenizer_class": "XLNetTokenizer", "do_lower_case": False, "remove_space": True,
              "keep_accents": True, "added_tokens_decoder": added,
              **{name: token if token in present else None for name, token in TOKENIZER_SPECIALS.items()},
              "additional_special_tokens": [token for token in ADDITIONAL_SPECIALS if token in present]}
    return {"tokenizer_config.json": json.dumps(config, indent=2)}, {"spiece.model": subwords.model_path}


def _config(model, symbols: List[str]) -> Dict:
    cfg = model.cfg
    ids = {symbol: i for i, symbol in enumerate(symbols)}
    return {"model_type": "xlnet", "architectures": ["XLNetLMHeadModel"], "vocab_size": len(symbols),
            "d_model": cfg.encoder_embed_dim, "n_layer": cfg.encoder_layers, "n_head": cfg.encoder_attention_heads,
            "d_head": cfg.encoder_head_dim, "d_inner": cfg.encoder_ffn_embed_dim, "ff_activation": ACTIVATION,
            "untie_r": not cfg.tie_position_biases, "attn_type": "bi", "bi_data": False,
            "clamp_len": cfg.clamp_len, "same_length": False, "mem_len": cfg.mem_len or None, "reuse_len": None,
            "dropout": cfg.dropout, "layer_norm_eps": LAYER_NORM_EPS, "initializer_range": cfg.init_std,
            "pad_token_id": ids.get("<pad>"), "bos_token_id": ids.get("<s>"), "eos_token_id": ids.get("</s>")}


def _state(model, dictionary, symbols: List[str]) -> Dict[str, Tensor]:
    """XLNetLMHeadModel's state dict with the vocabulary's rows in ``symbols``' order."""
    state = huggingface_state(model.state_dict())
    rows = torch.tensor([dictionary.indices.get(symbol, dictionary.unk()) for symbol in symbols])
    # the symbols a fine-tuning task appended (<mask>) were never a target: no probability either
    pretrained = len(dictionary) - model.appended
    absent = torch.tensor([dictionary.indices.get(symbol, pretrained) >= pretrained for symbol in symbols])
    embeddings = state[PREFIX + "word_embedding.weight"][rows]
    return {**state, PREFIX + "word_embedding.weight": embeddings, "lm_loss.weight": embeddings,
            "lm_loss.bias": state["lm_loss.bias"][rows].masked_fill(absent, ABSENT_PIECE_BIAS)}


def export(model, dictionary, subwords, out_dir: str, facts: Optional[CheckpointFacts] = None) -> None:
    """Write ``out_dir`` (which must not exist): config.json, model.safetensors
    and, with a sentencepiece corpus, spiece.model and tokenizer_config.json."""
    warn_about_heads(model)
    _check(model)
    symbols, pieces = exported_symbols(dictionary, subwords)
    files, copies = _tokenizer_files(symbols, pieces, subwords)
    write_directory(out_dir, _config(model, symbols), _state(model, dictionary, symbols), files, copies, facts)
