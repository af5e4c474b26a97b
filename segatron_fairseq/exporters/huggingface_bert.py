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
The ids stay ours; ``vocab.txt`` lists the dictionary with fairseq's specials
renamed to BERT's, so BERT's tokenizer gives the ids our text encoder gives.
"""
import json
import os
import shutil
from typing import Dict

import torch
from torch import Tensor

REMOTE_CODE_DIR = os.path.join(os.path.dirname(__file__), "hf_segabert")
REMOTE_CODE_FILES = ("configuration_segabert.py", "modeling_segabert.py")
BERT_NAMES = {"<s>": "[CLS]", "<pad>": "[PAD]", "</s>": "[SEP]", "<unk>": "[UNK]", "<mask>": "[MASK]"}
_LAYER_KEYS = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
               "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
               "self_attn_layer_norm": "attention.output.LayerNorm", "fc1": "intermediate.dense",
               "fc2": "output.dense", "final_layer_norm": "output.LayerNorm"}
_ACTIVATIONS = ("gelu", "relu")


def _check(args) -> None:
    if getattr(args, "encoder_normalize_before", False):
        raise NotImplementedError("a pre-norm encoder (--encoder-normalize-before) has no BERT class")
    if args.activation_fn not in _ACTIVATIONS:
        raise NotImplementedError(f"--activation-fn {args.activation_fn} (BERT's: {', '.join(_ACTIVATIONS)})")


def _config(model, dictionary, segabert: bool) -> Dict:
    args, encoder = model.args, model.encoder
    sentence_encoder = encoder.sentence_encoder
    layer_norm = sentence_encoder.layernorm_embedding
    config = {"vocab_size": len(dictionary), "hidden_size": args.encoder_embed_dim,
              "num_hidden_layers": args.encoder_layers, "num_attention_heads": args.encoder_attention_heads,
              "intermediate_size": args.encoder_ffn_embed_dim, "hidden_act": args.activation_fn,
              "hidden_dropout_prob": args.dropout, "attention_probs_dropout_prob": args.attention_dropout,
              "layer_norm_eps": layer_norm.eps, "pad_token_id": dictionary.pad(),
              "type_vocab_size": encoder.token_type_embeddings.num_embeddings if encoder.token_type_embeddings
              is not None else 2, "tie_word_embeddings": not getattr(args, "untie_weights_roberta", False)}
    if segabert:
        config.update(model_type="segabert", architectures=["SegaBertForMaskedLM"],
                      max_position_embeddings=args.max_positions,
                      auto_map={"AutoConfig": "configuration_segabert.SegaBertConfig",
                                "AutoModel": "modeling_segabert.SegaBertModel",
                                "AutoModelForMaskedLM": "modeling_segabert.SegaBertForMaskedLM"},
                      **{f"max_{name}_index": table.num_embeddings
                         for name, table in encoder.segment_embeddings.items()})
    else:
        config.update(model_type="bert", architectures=["BertForMaskedLM"],
                      max_position_embeddings=sentence_encoder.embed_positions.weight.size(0) - dictionary.pad() - 1)
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
             embeddings + "LayerNorm.bias": ours[e + "layernorm_embedding.bias"],
             "cls.predictions.decoder.weight": ours["encoder.lm_head.weight"],
             "cls.predictions.bias": ours["encoder.lm_head.bias"],
             "cls.predictions.decoder.bias": ours["encoder.lm_head.bias"]}
    for kind in ("weight", "bias"):
        state[f"cls.predictions.transform.dense.{kind}"] = ours[f"encoder.lm_head.dense.{kind}"]
        state[f"cls.predictions.transform.LayerNorm.{kind}"] = ours[f"encoder.lm_head.layer_norm.{kind}"]
    if segabert:
        for name in model.encoder.segment_embeddings:
            state[embeddings + f"index_embeddings.{name}.weight"] = ours[f"encoder.segment_embeddings.{name}.weight"]
    else:
        state[embeddings + "position_embeddings.weight"] = ours[e + "embed_positions.weight"][
            model.encoder.sentence_encoder.padding_idx + 1:]
    for layer in range(model.args.encoder_layers):
        for our_name, their_name in _LAYER_KEYS.items():
            for kind in ("weight", "bias"):
                state[f"{prefix}.encoder.layer.{layer}.{their_name}.{kind}"] = \
                    ours[f"{e}layers.{layer}.{our_name}.{kind}"]
    return {key: value.detach().float().contiguous().clone() for key, value in state.items()}


def _tokenizer_files(dictionary, subwords, max_length: int) -> Dict[str, str]:
    """vocab.txt and tokenizer_config.json for BERT's tokenizer: WordPiece as
    the corpus's, or whitespace words (no basic tokenization, no case change)."""
    from segatron_preprocess import subwords as kinds

    if isinstance(subwords, kinds.WordPiece):
        settings = {"do_lower_case": not subwords.cased, "do_basic_tokenize": True}
    elif isinstance(subwords, kinds.Words):
        settings = {"do_lower_case": False, "do_basic_tokenize": False}
    else:
        raise NotImplementedError("the corpus's sentencepiece model has no BERT tokenizer: export works for "
                                  "corpora binarized with --bpe wordpiece or --bpe none")
    symbols = [BERT_NAMES.get(symbol, symbol) for symbol in dictionary.symbols]
    clashes = [s for s in dictionary.symbols if s in BERT_NAMES.values()]
    if clashes:
        raise ValueError(f"the dictionary holds {clashes[0]}, which BERT's tokenizer reserves")
    config = {"tokenizer_class": "BertTokenizer", "model_max_length": max_length, **settings,
              **{f"{kind}_token": name for kind, name in (("cls", "[CLS]"), ("sep", "[SEP]"), ("pad", "[PAD]"),
                                                          ("unk", "[UNK]"), ("mask", "[MASK]"))}}
    return {"vocab.txt": "".join(s + "\n" for s in symbols), "tokenizer_config.json": json.dumps(config, indent=2)}


def export(model, dictionary, subwords, out_dir: str) -> None:
    """Write ``out_dir`` (which must not exist): config.json, model.safetensors,
    the tokenizer files and, for SegaBERT, the remote code. Written into a
    sibling directory first, so a failed export leaves nothing behind."""
    from safetensors.torch import save_file

    if os.path.exists(out_dir):
        raise FileExistsError(f"{out_dir} exists; choose a new directory")
    _check(model.args)
    segabert = model.encoder.segment_positions
    config = _config(model, dictionary, segabert)
    files = _tokenizer_files(dictionary, subwords, config["max_position_embeddings"])
    staging = out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        save_file(_state(model, "segabert" if segabert else "bert", segabert),
                  os.path.join(staging, "model.safetensors"), metadata={"format": "pt"})
        files["config.json"] = json.dumps(config, indent=2)
        for name, text in files.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                f.write(text)
        if segabert:
            for name in REMOTE_CODE_FILES:
                shutil.copyfile(os.path.join(REMOTE_CODE_DIR, name), os.path.join(staging, name))
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
