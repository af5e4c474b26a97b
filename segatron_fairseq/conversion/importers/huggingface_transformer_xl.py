"""A Hugging Face ``TransfoXLLMHeadModel`` directory (``config.json``,
``model.safetensors`` or ``pytorch_model.bin``, ``vocab.pkl`` or ``vocab.txt``)
as a ``segatron_xl`` checkpoint without segment parts (a Transformer-XL).

Its state dict is the original Transformer-XL layout under ``transformer.``
(``transformer_xl_state.py``), with one u, v pair per layer (``untie_r``) and
band i gated by the head's column cutoff_0 + i - 1. ``save_pretrained`` leaves
out the tied tensors, which are restored here: ``crit.out_layers.i.weight`` is
``word_emb.emb_layers.i.weight`` (``tie_word_embeddings``) and
``crit.out_projs.i`` is ``word_emb.emb_projs.i`` where ``tie_projs[i]``.
"""
import pickle
from typing import Dict, List, Tuple

from torch import Tensor

from . import transformer_xl_state
from .huggingface_files import find_file, read_config, read_weights
from .vocabulary import MappedVocabulary, map_vocabulary, read_words

_VOCAB_FILES = ("vocab.pkl", "vocab.txt")


class _Inert:
    """What an object of any class not listed in ``_VocabularyUnpickler`` becomes:
    nothing of it runs (the tokenizer's Moses objects, compiled patterns)."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class _VocabularyUnpickler(pickle.Unpickler):
    """``vocab.pkl`` is the tokenizer's ``__dict__`` pickled; only its plain
    containers are rebuilt, so loading it runs no code from the file."""
    _ALLOWED = {("collections", "OrderedDict"), ("collections", "Counter"), ("builtins", "set"),
                ("builtins", "frozenset")}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        return _Inert


def read_vocabulary(path: str) -> List[str]:
    """The tokenizer's words in id order, from ``vocab.pkl`` (its ``idx2sym``)
    or a text file (the first field of each line)."""
    if not path.endswith(".pkl"):
        return read_words(path)
    with open(path, "rb") as f:
        try:
            vocabulary = _VocabularyUnpickler(f).load()
        except (pickle.UnpicklingError, EOFError, AttributeError, TypeError) as err:
            raise ValueError(f"{path}: not a pickled TransfoXLTokenizer vocabulary ({err})") from err
    words = vocabulary.get("idx2sym") if isinstance(vocabulary, dict) else None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise ValueError(f"{path}: no list of words under 'idx2sym'")
    if len(set(words)) != len(words):
        raise ValueError(f"{path}: a word appears twice")
    return words


def _untie(state: Dict[str, Tensor], config: Dict, n_bands: int) -> Dict[str, Tensor]:
    """The tensors ``save_pretrained`` left out because they are tied."""
    ties = {}
    projections_tied = config.get("tie_projs") or []
    for band in range(n_bands):
        if config.get("tie_word_embeddings", True):
            ties[f"crit.out_layers.{band}.weight"] = f"word_emb.emb_layers.{band}.weight"
        if config["div_val"] > 1 and band < len(projections_tied) and projections_tied[band]:
            ties[f"crit.out_projs.{band}"] = f"word_emb.emb_projs.{band}"
    restored = {key: state[source] for key, source in ties.items() if key not in state and source in state}
    return {**state, **restored}


def convert_directory(directory: str, tgt_len: int) -> Tuple[MappedVocabulary, List[str], Dict[str, Tensor]]:
    """The checkpoint in ``directory``: its vocabulary mapped onto fairseq's, the
    fairseq-train arguments and the state dict. ``tgt_len``: the segment length
    recorded in the checkpoint (the Hugging Face config has none)."""
    keys = ("vocab_size", "cutoffs", *(key for key in transformer_xl_state.CONFIG_KEYS if key != "tgt_len"))
    config_path, config = read_config(directory, "transfo-xl", keys)
    if not config.get("adaptive", True) or config.get("sample_softmax", -1) > 0:
        raise NotImplementedError(f"{config_path}: only the adaptive softmax without sampling is supported")
    if config.get("layer_norm_epsilon", 1e-5) != 1e-5:
        raise NotImplementedError(f"{config_path}: layer_norm_epsilon {config['layer_norm_epsilon']} (ours is 1e-5)")
    vocab_path = find_file(directory, _VOCAB_FILES, "vocabulary")
    words = read_vocabulary(vocab_path)
    if len(words) != config["vocab_size"]:
        raise ValueError(f"{vocab_path} has {len(words)} words; {config_path} says vocab_size {config['vocab_size']}")
    vocabulary = map_vocabulary(words, list(config["cutoffs"]), vocab_path)
    state_path, state = read_weights(directory)
    state = {key[len("transformer."):] if key.startswith("transformer.") else key: value
             for key, value in state.items()}
    state = _untie(state, config, len(config["cutoffs"]) + 1)
    their_config = {**config, "n_token": config["vocab_size"], "tgt_len": tgt_len}
    arguments, converted = transformer_xl_state.convert(state, their_config, vocabulary, state_path,
                                                        reversed_gates=False)
    return vocabulary, arguments, converted
