"""What every Hugging Face export writes: BERT-named layers, the tokenizer
files, and the directory itself (written in a new private directory beside its
place and renamed into place when complete, so a failed or stopped export
leaves nothing behind and removes nothing it did not make)."""
import json
import logging
import os
import shutil
from typing import Dict, Optional, Tuple

from torch import Tensor

from segatron_fairseq.conversion.bert_names import BERT_SPECIAL_NAMES, ENCODER_LAYER_KEYS
from segatron_preprocess.atomic import atomic_path

from .model_card import CheckpointFacts, card_files
from .requirements import imported_packages

logger = logging.getLogger(__name__)


def layer_state(ours: Dict[str, Tensor], our_prefix: str, their_prefix: str,
                keys: Dict[str, str] = ENCODER_LAYER_KEYS) -> Dict[str, Tensor]:
    """One layer's tensors under BertLayer's names."""
    return {f"{their_prefix}{theirs}.{kind}": ours[f"{our_prefix}{name}.{kind}"]
            for name, theirs in keys.items() for kind in ("weight", "bias")}


def position_rows(sentence_encoder) -> Tensor:
    """fairseq's learned positions (rows from the padding index + 1 on, as
    fairseq counts them) as BERT's table (rows from 0)."""
    return sentence_encoder.embed_positions.weight.detach()[sentence_encoder.padding_idx + 1:]


def lm_head_state(ours: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """RoBERTa's LM head as BERT's ``cls.predictions``."""
    state = {"cls.predictions.decoder.weight": ours["encoder.lm_head.weight"],
             "cls.predictions.bias": ours["encoder.lm_head.bias"],
             "cls.predictions.decoder.bias": ours["encoder.lm_head.bias"]}
    for kind in ("weight", "bias"):
        state[f"cls.predictions.transform.dense.{kind}"] = ours[f"encoder.lm_head.dense.{kind}"]
        state[f"cls.predictions.transform.LayerNorm.{kind}"] = ours[f"encoder.lm_head.layer_norm.{kind}"]
    return state


TOKENIZER_CODE = os.path.join(os.path.dirname(__file__), "hf_tokenizer", "tokenization_segatron.py")
_SPECIALS = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
             "mask_token": "[MASK]"}


def tokenizer_files(dictionary, subwords, max_length: int) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The tokenizer's files: (name -> text, name -> file to copy). Our ids
    stay, so the tokenizer gives the ids our text encoder gives:
    - WordPiece or whitespace words: BERT's tokenizer, ``vocab.txt`` listing
      the dictionary with ``<s> <pad> </s> <unk> <mask>`` renamed to BERT's
      (whitespace words: no basic tokenization, no case change);
    - sentencepiece: the corpus's model and a small tokenizer class (remote
      code, ``hf_tokenizer/``) that maps its pieces through the dictionary."""
    from segatron_preprocess import subwords as kinds

    if isinstance(subwords, kinds.SentencePiece):
        config = {"tokenizer_class": "SegatronSentencePieceTokenizer", "model_max_length": max_length,
                  "auto_map": {"AutoTokenizer": ["tokenization_segatron.SegatronSentencePieceTokenizer", None]}}
        vocab = "".join(symbol + "\n" for symbol in dictionary.symbols)
        return ({"vocab.txt": vocab, "tokenizer_config.json": json.dumps(config, indent=2)},
                {"sentencepiece.model": subwords.model_path, "tokenization_segatron.py": TOKENIZER_CODE})
    if isinstance(subwords, kinds.WordPiece):
        settings = {"do_lower_case": not subwords.cased, "do_basic_tokenize": True}
    else:
        settings = {"do_lower_case": False, "do_basic_tokenize": False}
    clashes = [s for s in dictionary.symbols if s in BERT_SPECIAL_NAMES.values()]
    if clashes:
        raise ValueError(f"the dictionary holds {clashes[0]}, which BERT's tokenizer reserves")
    symbols = [BERT_SPECIAL_NAMES.get(symbol, symbol) for symbol in dictionary.symbols]
    config = {"tokenizer_class": "BertTokenizer", "model_max_length": max_length, **settings, **_SPECIALS}
    return {"vocab.txt": "".join(s + "\n" for s in symbols), "tokenizer_config.json": json.dumps(config, indent=2)}, {}


INDEX_TOKENIZER_CODE = os.path.join(os.path.dirname(__file__), "hf_tokenizer", "tokenization_segment_indexes.py")
# in the model's config.json too: pipeline(task, model=DIR) loads a remote-code model's tokenizer only when its
# config names one
INDEX_TOKENIZER_CLASS = "SegmentIndexTokenizer"


def index_tokenizer_files(dictionary, text_encoder, layout: str, max_length: Optional[int],
                          table_sizes: Optional[Dict[str, int]] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The files of ``SegmentIndexTokenizer`` (remote code, ``hf_tokenizer/``),
    which computes the segment indexes of raw text as ``text_encoder`` (a
    ``segatron_preprocess.text_encoder.TextEncoder`` of the corpus) does,
    running the binarizer's own modules shipped beside it; ``layout``:
    ``encoder`` (SegaBERT), ``stream`` (Segatron-XL) or ``sequence``
    (Cross-Thought: sub-words alone, no splitter). Returns (name -> text, name
    -> file to copy)."""
    from segatron_preprocess import sentences
    from segatron_preprocess import subwords as kinds

    from .shipped_code import ENCODER_LAYOUT_MODULES, TEXT_LAYOUT_MODULES, shipped_files

    pieces = text_encoder.segmenter.subwords
    config = {"tokenizer_class": INDEX_TOKENIZER_CLASS, "layout": layout,
              "index_table_sizes": table_sizes, "stream_style": text_encoder.stream_style,
              "input_format": "lines" if layout == "encoder" else text_encoder.raw_text_format,
              "subwords": "none", "cased": False, "clean_up_tokenization_spaces": False,
              "auto_map": {"AutoTokenizer": ["tokenization_segment_indexes.SegmentIndexTokenizer", None]}}
    if max_length is not None:  # the encoder's; a stream has no length
        config["model_max_length"] = max_length
    copies = {"tokenization_segment_indexes.py": INDEX_TOKENIZER_CODE}
    if isinstance(pieces, kinds.SentencePiece):
        config["subwords"] = "sentencepiece"
        copies["sentencepiece.model"] = pieces.model_path
    elif isinstance(pieces, kinds.WordPiece):
        config.update(subwords="wordpiece", cased=pieces.cased)
        copies["wordpiece-vocab.txt"] = pieces.vocab_path
    files = {"vocab.txt": "".join(symbol + "\n" for symbol in dictionary.symbols),
             "tokenizer_config.json": json.dumps(config, indent=2),
             **shipped_files(TEXT_LAYOUT_MODULES + ENCODER_LAYOUT_MODULES)}
    if layout != "sequence":
        files["punkt.json"] = json.dumps(sentences.params_to_json(text_encoder.segmenter.splitter._params))
    return files, copies


def warn_about_heads(model) -> None:
    """Fine-tuned heads (``EncoderInterface.head_names``) have no place in the exported classes."""
    heads = model.head_names()
    if heads:
        logger.warning(f"classification heads {', '.join(heads)} are not exported (the encoder and MLM head are)")


def write_directory(out_dir: str, config: Dict, state: Dict[str, Tensor], files: Dict[str, str],
                    copies: Dict[str, str], facts: Optional[CheckpointFacts] = None) -> None:
    """``out_dir`` (which must not exist): config.json, model.safetensors,
    ``files`` (name -> text) and ``copies`` (name -> the file to copy: remote
    code, a sentencepiece model); with ``facts`` (the source checkpoint's) the
    model card, which lists the packages the directory's Python files import
    (``requirements``), and generation_config.json (``model_card``). Every
    file gets an ordinary file's mode (0666 less the umask)."""
    from safetensors.torch import save

    if os.path.lexists(out_dir):
        raise FileExistsError(f"{out_dir} exists; choose a new directory")
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    with atomic_path(out_dir) as staging:
        os.mkdir(staging)
        tensors = {key: value.detach().float().contiguous().clone() for key, value in state.items()}
        # through open(): safetensors' save_file writes a temporary file of mode 0600 and renames it
        with open(os.path.join(staging, "model.safetensors"), "wb") as f:
            f.write(save(tensors, metadata={"format": "pt"}))
        sources = {name: text for name, text in files.items() if name.endswith(".py")}
        for name, source in copies.items():
            if name.endswith(".py"):
                with open(source, encoding="utf-8") as f:
                    sources[name] = f.read()
        cards = card_files(config, facts, imported_packages(sources))
        for name, text in {**files, **cards, "config.json": json.dumps(config, indent=2)}.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                f.write(text)
        for name, source in copies.items():
            shutil.copyfile(source, os.path.join(staging, name))
