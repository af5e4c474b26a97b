"""The Cross-Thought authors' released checkpoint (their fairseq 0.10 RoBERTa
with a replaced ``TransformerSentenceEncoder``) as a ``cross_thought`` one.

Their state dict -> ours (E = encoder.sentence_encoder; their prefix
``encoder.`` or, in older fairseq, ``decoder.``):
    E.embed_tokens                 E.embed_tokens; its <s> row is also encoder.special_embeddings
                                   (their N special tokens are N copies of <s>: --shared-special-embedding)
    E.embed_positions (514, d)     encoder.positions: the same rows. In pre-training their specials take
                                   positions 0..N-1 and the words N+o.., as ours do
    E.emb_layer_norm               E.layernorm_embedding
    E.layers.N                     E.layers.N (the same names)
    E.crossthought_layers.0        encoder.cross_layers.0.0: one cross-sequence layer shared by the N
                                   special indexes (--share-cross-layers)
        self_attn / self_attn_layer_norm / fc1 / fc2 / final_layer_norm
                                   attention / attention_norm / ffn.0 / ffn.3 / ffn_norm
    E.crossthought_layers.1        encoder.final_layer (Eq. 8: the layer over all tokens after the cross)
    lm_head                        the same
Their code fixes N = 5 special tokens. Their fine-tuning classifies the mean
of the cross states (--pair-pooling average); classification heads in the
checkpoint are left out, as fine-tuning registers its own.
"""
from typing import Dict, List, Tuple

from torch import Tensor

NUM_SPECIAL = 5
_CROSS_KEYS = {"self_attn.": "attention.", "self_attn_layer_norm.": "attention_norm.", "fc1.": "ffn.0.",
               "fc2.": "ffn.3.", "final_layer_norm.": "ffn_norm."}


def _model_options(args, source: str) -> Dict:
    """Their sizes, from the checkpoint's ``args`` (a Namespace) or ``cfg.model``."""
    get = (lambda name: getattr(args, name, None)) if not isinstance(args, dict) else args.get
    options = {name: get(name) for name in ("encoder_layers", "encoder_embed_dim", "encoder_ffn_embed_dim",
                                            "encoder_attention_heads", "activation_fn", "dropout",
                                            "attention_dropout", "activation_dropout", "pooler_dropout")}
    missing = [name for name in ("encoder_layers", "encoder_attention_heads") if options[name] is None]
    if missing:
        raise ValueError(f"{source}: its model arguments lack {', '.join(missing)}")
    if options["activation_fn"] not in (None, "gelu"):
        raise NotImplementedError(f"{source}: activation_fn {options['activation_fn']!r} (the cross-sequence "
                                  "layer is GELU)")
    return options


def convert(checkpoint: Dict, num_words: int, source: str) -> Tuple[List[str], Dict[str, Tensor]]:
    """``checkpoint``: their fairseq checkpoint (``model`` and ``args`` or
    ``cfg``); ``num_words``: the size of our dictionary (dict.txt with
    ``<mask>``). Returns the fairseq-train arguments (task
    ``cross_thought_mlm``) and our state dict."""
    if "model" not in checkpoint:
        raise ValueError(f"{source}: not a fairseq checkpoint (no 'model')")
    args = checkpoint.get("args") or (checkpoint.get("cfg") or {}).get("model")
    if args is None:
        raise ValueError(f"{source}: neither 'args' nor 'cfg' holds the model's arguments")
    options = _model_options(args, source)
    state = {("encoder." + key[len("decoder."):] if key.startswith("decoder.") else key): value
             for key, value in checkpoint["model"].items()}
    theirs = "encoder.sentence_encoder."
    needed = [theirs + "crossthought_layers.1.fc1.weight", theirs + "embed_positions.weight"]
    if any(key not in state for key in needed):
        raise ValueError(f"{source}: no {' or '.join(k for k in needed if k not in state)}: not a Cross-Thought "
                         "checkpoint")
    embed_tokens = state[theirs + "embed_tokens.weight"]
    if embed_tokens.size(0) != num_words:
        raise ValueError(f"{source}: {embed_tokens.size(0)} word embeddings, but the dictionary with <mask> has "
                         f"{num_words} symbols")
    positions = state[theirs + "embed_positions.weight"]
    converted = {"encoder.special_embeddings.weight": embed_tokens[0:1].clone(), "encoder.positions.weight": positions}
    for key, value in state.items():
        if key.startswith(theirs + "crossthought_layers.0."):
            rest = key[len(theirs + "crossthought_layers.0."):]
            prefix = next(p for p in _CROSS_KEYS if rest.startswith(p))
            converted["encoder.cross_layers.0.0." + _CROSS_KEYS[prefix] + rest[len(prefix):]] = value
        elif key.startswith(theirs + "crossthought_layers.1."):
            converted["encoder.final_layer." + key[len(theirs + "crossthought_layers.1."):]] = value
        elif key.startswith(theirs + "emb_layer_norm."):
            converted[theirs + "layernorm_embedding." + key[len(theirs + "emb_layer_norm."):]] = value
        elif key.startswith((theirs + "layers.", "encoder.lm_head.")) or key == theirs + "embed_tokens.weight":
            converted[key] = value
        elif key != theirs + "embed_positions.weight" and not key.endswith("version") \
                and not key.startswith("classification_heads."):
            raise ValueError(f"{source}: unexpected key {key}")
    arguments = ["--arch", "cross_thought_base", "--encoder-layers", options["encoder_layers"],
                 "--encoder-embed-dim", embed_tokens.size(1), "--encoder-ffn-embed-dim",
                 state[theirs + "layers.0.fc1.weight"].size(0), "--encoder-attention-heads",
                 options["encoder_attention_heads"], "--num-special-tokens", NUM_SPECIAL,
                 "--shared-special-embedding", "--share-cross-layers", "--cross-layers", 1,
                 "--max-positions", positions.size(0), "--pair-pooling", "average"]
    for name in ("dropout", "attention_dropout", "activation_dropout", "pooler_dropout"):
        if options[name] is not None:
            arguments += ["--" + name.replace("_", "-"), options[name]]
    return [str(a) for a in arguments], {k: v.float() if v.is_floating_point() else v for k, v in converted.items()}
