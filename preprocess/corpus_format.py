"""The on-disk format of a ``segatron-preprocess`` directory: the one contract
between the binarizer (which writes it) and the plugin's datasets (which read
it). Only numpy is imported here, so both sides can use it cheaply.

    DESTDIR/
      dict.txt                          fairseq dictionary
      {split}.bin / .idx                token ids (fairseq MMapIndexedDataset)
      {split}.paragraph.bin / .idx      uint16 index of each token, same items and lengths
      {split}.sentence.bin / .idx
      {split}.token.bin / .idx
      sentencepiece.model               with --bpe sentencepiece
      wordpiece-vocab.txt               with --bpe wordpiece (a copy of --bpe-vocab)
      punkt_tab/                        a trained Punkt model (NLTK's punkt_tab format);
                                        0.1.0 wrote punkt.json instead, still read
      segatron_preprocess.json          metadata: the run's settings and, per split, a summary and
                                        its manifest (its state; the size, sha256 and sampled sha256
                                        of its eight files; the sha256 of dict.txt and of the
                                        splitter's and sub-words' files it was binarized with)

Index semantics (0-based, per token, eos included): paragraph in its document,
sentence in its paragraph, token in its sentence (see ``indexer.py``). So a
token starts a sentence where its token index is 0, a paragraph where its
token and sentence indexes are 0, and a document where all three are 0:

    tokens     = The  crab  lives  .  It  hides  .  </s>  Seals  rest  .  </s>
    paragraph  =  0    0     0     0  0    0     0   0      1     1    1   1
    sentence   =  0    0     0     0  1    1     1   1      0     0    0   0
    token      =  0    1     2     3  0    1     2   3      0     1    2   3
    starts     =  D                   S                     P
"""
import json
import os
from typing import Dict, List

import numpy as np

INDEX_NAMES = ("paragraph", "sentence", "token")
INDEX_DTYPE = np.uint16

# --stream-style: "fairseq" (the default) writes the items fairseq-preprocess writes; "authors" follows the
# Segatron authors' WikiText-103 stream: no blank-line items, headings split into sentences like text, and
# a paragraph index that runs over the whole split (never reset at documents, so stored as uint32)
STREAM_STYLES = ("fairseq", "authors")


def index_dtypes(stream_style: str) -> Dict[str, type]:
    """The dtype of each index dataset."""
    dtypes = {name: INDEX_DTYPE for name in INDEX_NAMES}
    if stream_style == "authors":
        dtypes["paragraph"] = np.uint32
    return dtypes

DICT_FILE = "dict.txt"
METADATA_FILE = "segatron_preprocess.json"
SENTENCEPIECE_FILE = "sentencepiece.model"
WORDPIECE_FILE = "wordpiece-vocab.txt"
PUNKT_DIR = "punkt_tab"
LEGACY_PUNKT_FILE = "punkt.json"

# keys of METADATA_FILE
INPUT_FORMAT, SENTENCE_SPLITTER, BPE, SPLITS = "input_format", "sentence_splitter", "bpe", "splits"
STREAM_STYLE, BPE_VOCAB_SIZE, BPE_CASED = "stream_style", "bpe_vocab_size", "bpe_cased"
NO_BPE, SENTENCEPIECE, WORDPIECE = "none", "sentencepiece", "wordpiece"
# a split's manifest in SPLITS[split]: STATE is WRITING from before its files are replaced until the rest is
# written, last: FILES, SHA256 and SAMPLED_SHA256 (file name -> size in bytes, sha256 of the whole file, sha256
# of sampled blocks: digests.py) and RESOURCES (path in the directory -> sha256 of the RESOURCE_NAMES files
# there when the split was written). Splits of 0.2.0 have STATE and FILES only, splits of 0.1.0 none of them
STATE, WRITING, COMPLETE, FILES = "state", "writing", "complete", "files"
SHA256, SAMPLED_SHA256, RESOURCES = "sha256", "sampled_sha256", "resources"
RESOURCE_NAMES = (DICT_FILE, SENTENCEPIECE_FILE, WORDPIECE_FILE, PUNKT_DIR, LEGACY_PUNKT_FILE)


def index_prefix(prefix: str, name: str) -> str:
    """``DIR/train`` -> ``DIR/train.sentence`` for index ``name``."""
    return f"{prefix}.{name}"


def dataset_prefixes(prefix: str) -> List[str]:
    """The token dataset's prefix, then one per index."""
    return [prefix] + [index_prefix(prefix, name) for name in INDEX_NAMES]


def dataset_files(prefix: str) -> List[str]:
    """The eight files of a split: ``.bin`` and ``.idx`` of the tokens and of each index."""
    return [f"{p}.{ext}" for p in dataset_prefixes(prefix) for ext in ("bin", "idx")]


def sentence_starts(token_index: np.ndarray) -> np.ndarray:
    """True where a token begins a sentence."""
    return token_index == 0


def paragraph_starts(token_index: np.ndarray, sentence_index: np.ndarray) -> np.ndarray:
    """True where a token begins a paragraph."""
    return sentence_starts(token_index) & (sentence_index == 0)


def document_starts(token_index: np.ndarray, sentence_index: np.ndarray, paragraph_index: np.ndarray) -> np.ndarray:
    """True where a token begins a document."""
    return paragraph_starts(token_index, sentence_index) & (paragraph_index == 0)


def read_metadata(directory: str) -> Dict:
    """``segatron_preprocess.json`` of ``directory``; {} when there is none
    (a ``fairseq-preprocess`` directory). ``ValueError`` when it is not a JSON
    object, or its SPLITS not an object."""
    path = os.path.join(directory, METADATA_FILE)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        try:
            metadata = json.load(f)
        except ValueError as err:
            raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: holds {json_kind(metadata)}, not a JSON object; the file was edited or damaged")
    if not isinstance(metadata.get(SPLITS, {}), dict):
        raise ValueError(f"{path}: {SPLITS} is {json_kind(metadata[SPLITS])}, not an object (split name -> "
                         f"manifest); the file was edited or damaged")
    return metadata


def json_kind(value) -> str:
    """What a JSON value is, as a message says it: ``a list``, ``a string ('154310')``, ``null``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r}{'...' if len(value) > 40 else ''})"
    return "a list" if isinstance(value, list) else "an object"
