"""A ``segatron_xl`` model (Segatron-XL, or Transformer-XL without segment
parts) as a Hugging Face directory: ``SegatronXLForCausalLM``, remote code
loaded with ``trust_remote_code=True``. The attention, distances, layers,
layer stack and memory are this plugin's own modules, copied verbatim beside
``modeling_segatron_xl.py`` (which imports them relatively), with the
tokenizer that lays raw text out as a stream with its sentence / paragraph
starts and the generation indexer (the binarizer's modules,
``shipped_code.py``); the adaptive input and softmax are written in the
remote code itself.

    decoder.embed_tokens                  transformer.embed_tokens (a token table)
    decoder.embed_tokens.embeddings.i.0/1 transformer.adaptive_input.tables.i / projections.i
    decoder.layers / content_bias / position_bias / final_norm
                                          transformer.<the same names>
    decoder.adaptive_softmax.head         adaptive_softmax.head_words (its first c_0 rows, unless tied),
                                          head_gates (the band gates), head_bias
    decoder.adaptive_softmax.tail.i       adaptive_softmax.band_projections.i (unless tied with
                                          --tie-adaptive-proj), band_outputs.i (unless tied), band_biases.i
"""
import os
from typing import Dict, Optional

from torch import Tensor

from .huggingface_directory import INDEX_TOKENIZER_CLASS, index_tokenizer_files, write_directory
from .model_card import CheckpointFacts
from .shipped_code import GENERATION_MODULES, SEGATRON_XL_MODULES, shipped_files

REMOTE_CODE_DIR = os.path.join(os.path.dirname(__file__), "hf_segatron_xl")
REMOTE_CODE_FILES = ("configuration_segatron_xl.py", "modeling_segatron_xl.py")


def _config(decoder, dictionary, tgt_len: int) -> Dict:
    from fairseq import utils

    cfg = decoder.cfg
    cutoff = utils.eval_str_list(cfg.adaptive_softmax_cutoff, type=int) if cfg.adaptive_softmax_cutoff else None
    tied = bool(cfg.adaptive_input and cfg.tie_adaptive_weights and cutoff)
    return {"model_type": "segatron_xl", "architectures": ["SegatronXLForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_segatron_xl.SegatronXLConfig",
                         "AutoModel": "modeling_segatron_xl.SegatronXLModel",
                         "AutoModelForCausalLM": "modeling_segatron_xl.SegatronXLForCausalLM"},
            "vocab_size": len(dictionary), "embed_dim": cfg.decoder_embed_dim, "num_layers": cfg.decoder_layers,
            "attention_heads": cfg.decoder_attention_heads, "head_dim": cfg.decoder_head_dim,
            "ffn_dim": cfg.decoder_ffn_embed_dim, "dropout": cfg.dropout, "attention_dropout": cfg.attention_dropout,
            "pre_norm": cfg.pre_norm, "mem_len": cfg.mem_len, "clamp_len": cfg.clamp_len,
            "same_length": cfg.same_length, "per_layer_position_biases": decoder.content_bias.size(0) > 1,
            "sentence_part": "sentence" in decoder.part_dims, "paragraph_part": "paragraph" in decoder.part_dims,
            "segment_distance_origin": str(cfg.segment_distance_origin), "adaptive_input": bool(cfg.adaptive_input),
            "adaptive_softmax_cutoff": cutoff, "adaptive_softmax_factor": cfg.adaptive_softmax_factor,
            "adaptive_softmax_bias": bool(cutoff and cfg.adaptive_softmax_bias), "tie_adaptive_weights": tied,
            "tie_adaptive_proj": bool(tied and cfg.tie_adaptive_proj), "tie_word_embeddings": False,
            "generation_window": decoder.decoding_window(tgt_len), "bos_token_id": dictionary.bos(),
            "eos_token_id": dictionary.eos(), "pad_token_id": dictionary.pad()}


def _adaptive_softmax_state(softmax, config: Dict, checkpoint: str) -> Dict[str, Tensor]:
    """``adaptive_softmax.*`` of the remote code from fairseq's (or the plugin's biased) adaptive softmax."""
    from fairseq.modules.adaptive_softmax import TiedHeadModule, TiedLinear

    biased, tied, first = config["adaptive_softmax_bias"], config["tie_adaptive_weights"], softmax.cutoff[0]
    head = softmax.head.layer if biased and tied else softmax.head
    state = {}
    if tied:
        if not (isinstance(head, TiedHeadModule) and isinstance(head.word_proj, TiedLinear)):
            raise NotImplementedError(f"{checkpoint}: the adaptive softmax's head projects before its tied words, "
                                      "which the exported model cannot express")
        state["head_gates.weight"] = head.class_proj.weight
    else:
        state["head_words.weight"], state["head_gates.weight"] = head.weight[:first], head.weight[first:]
    if biased:
        state["head_bias"] = softmax.head.bias
    for i, (projection, _, output) in enumerate(softmax.tail):
        if not config["tie_adaptive_proj"]:
            state[f"band_projections.{i}.weight"] = projection.weight
        if not tied:
            state[f"band_outputs.{i}.weight"] = output.weight
        if biased:
            state[f"band_biases.{i}"] = output.bias
    return {f"adaptive_softmax.{name}": value for name, value in state.items()}


def _state(decoder, config: Dict, checkpoint: str) -> Dict[str, Tensor]:
    state = {f"transformer.{name}": value for name, value in decoder.layers.state_dict(prefix="layers.").items()}
    state["transformer.content_bias"], state["transformer.position_bias"] = decoder.content_bias, decoder.position_bias
    if decoder.final_norm is not None:
        state.update({f"transformer.{k}": v for k, v in decoder.final_norm.state_dict(prefix="final_norm.").items()})
    if config["adaptive_input"]:
        for i, (table, projection) in enumerate(decoder.embed_tokens.embeddings):
            state[f"transformer.adaptive_input.tables.{i}.weight"] = table.weight
            state[f"transformer.adaptive_input.projections.{i}.weight"] = projection.weight
    else:
        state["transformer.embed_tokens.weight"] = decoder.embed_tokens.weight
    if decoder.adaptive_softmax is not None:
        state.update(_adaptive_softmax_state(decoder.adaptive_softmax, config, checkpoint))
    return state


def export(model, dictionary, out_dir: str, checkpoint: str, text_encoder, tgt_len: int,
           facts: Optional[CheckpointFacts] = None) -> None:
    """Write ``model`` (a ``SegatronXLModel``, in eval mode) with ``dictionary``'s size to ``out_dir``, with the
    tokenizer of ``text_encoder`` (the corpus's ``TextEncoder``: the stream layout and its starts);
    ``checkpoint``: its file, named by the errors; ``tgt_len``: its training segment length, which sets the
    window ``generate()`` decodes with. ``--compile-layers`` (a training speed-up) is dropped."""
    config = {**_config(model.decoder, dictionary, tgt_len), "tokenizer_class": INDEX_TOKENIZER_CLASS}
    files, copies = index_tokenizer_files(dictionary, text_encoder, "stream", None)
    copies.update({name: os.path.join(REMOTE_CODE_DIR, name) for name in REMOTE_CODE_FILES})
    files.update(shipped_files(SEGATRON_XL_MODULES + GENERATION_MODULES))
    write_directory(out_dir, config, _state(model.decoder, config, checkpoint), files, copies, facts)
