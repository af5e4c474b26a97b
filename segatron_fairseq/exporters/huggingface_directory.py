"""What every Hugging Face export writes: BERT-named layers, the tokenizer
files, and the directory itself (written beside its place first, so a failed
export leaves nothing behind)."""
import json
import os
import shutil
from typing import Dict, Sequence

from torch import Tensor

BERT_NAMES = {"<s>": "[CLS]", "<pad>": "[PAD]", "</s>": "[SEP]", "<unk>": "[UNK]", "<mask>": "[MASK]"}
# fairseq's TransformerEncoderLayer -> BertLayer (both post-norm)
ENCODER_LAYER_KEYS = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
                      "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
                      "self_attn_layer_norm": "attention.output.LayerNorm", "fc1": "intermediate.dense",
                      "fc2": "output.dense", "final_layer_norm": "output.LayerNorm"}
ACTIVATIONS = ("gelu", "relu")


def layer_state(ours: Dict[str, Tensor], our_prefix: str, their_prefix: str,
                keys: Dict[str, str] = ENCODER_LAYER_KEYS) -> Dict[str, Tensor]:
    """One layer's tensors under BertLayer's names."""
    return {f"{their_prefix}{theirs}.{kind}": ours[f"{our_prefix}{name}.{kind}"]
            for name, theirs in keys.items() for kind in ("weight", "bias")}


def lm_head_state(ours: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """RoBERTa's LM head as BERT's ``cls.predictions``."""
    state = {"cls.predictions.decoder.weight": ours["encoder.lm_head.weight"],
             "cls.predictions.bias": ours["encoder.lm_head.bias"],
             "cls.predictions.decoder.bias": ours["encoder.lm_head.bias"]}
    for kind in ("weight", "bias"):
        state[f"cls.predictions.transform.dense.{kind}"] = ours[f"encoder.lm_head.dense.{kind}"]
        state[f"cls.predictions.transform.LayerNorm.{kind}"] = ours[f"encoder.lm_head.layer_norm.{kind}"]
    return state


def tokenizer_files(dictionary, subwords, max_length: int) -> Dict[str, str]:
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


def write_directory(out_dir: str, config: Dict, state: Dict[str, Tensor], files: Dict[str, str],
                    code_dir: str = "", code_files: Sequence[str] = ()) -> None:
    """``out_dir`` (which must not exist): config.json, model.safetensors,
    ``files`` (name -> text) and the remote code ``code_files`` of ``code_dir``."""
    from safetensors.torch import save_file

    if os.path.exists(out_dir):
        raise FileExistsError(f"{out_dir} exists; choose a new directory")
    staging = out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        tensors = {key: value.detach().float().contiguous().clone() for key, value in state.items()}
        save_file(tensors, os.path.join(staging, "model.safetensors"), metadata={"format": "pt"})
        for name, text in {**files, "config.json": json.dumps(config, indent=2)}.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                f.write(text)
        for name in code_files:
            shutil.copyfile(os.path.join(code_dir, name), os.path.join(staging, name))
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
