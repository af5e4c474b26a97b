"""fairseq's sharded data for every task of the plugin: ``--data
DIR1:DIR2:...`` (and ``--pretrain-data``), segatron-preprocess directories
binarized alike, e.g. with one ``--srcdict``.

Epoch k trains on shard (k - 1) mod n, as fairseq's ``language_modeling``
reads its shards; every other split (valid, test) is read from the first
shard, as in fairseq's ``translation``, and so are the dictionary, the
sentence splitter and the sub-words. fairseq reloads the training split at
each epoch when ``--data`` names several shards (``has_sharded_data``), and a
run resumed mid-epoch reloads its epoch's shard (``load_checkpoint``).

``check_shards_agree`` refuses, before any model is built, shards binarized
differently: one line naming both directories and the difference.
"""
import hashlib
import os
from typing import Dict, List

from fairseq import utils

from segatron_preprocess.corpus_format import (
    BPE,
    BPE_CASED,
    DICT_FILE,
    LEGACY_PUNKT_FILE,
    NO_BPE,
    PUNKT_DIR,
    SENTENCE_SPLITTER,
    SENTENCEPIECE_FILE,
    SHA256,
    SPLITS,
    STATE,
    STREAM_STYLE,
    WORDPIECE_FILE,
    read_metadata,
)
from segatron_preprocess.digests import file_sha256
from segatron_preprocess.split_error import SplitFileError


def data_shards(data: str) -> List[str]:
    """The directories of ``data`` (``DIR1:DIR2:...``; one directory: itself)."""
    return utils.split_paths(data)


def first_shard(data: str) -> str:
    """The directory that gives the dictionary, splitter, sub-words and every split but the training one."""
    return data_shards(data)[0]


def shard_index(shards: int, split: str, epoch: int, train_subset: str) -> int:
    """Which of ``shards`` directories ``split`` is read from at ``epoch`` (from 1): (epoch - 1) mod shards
    for the training split ``train_subset``, the first for any other."""
    return (epoch - 1) % shards if split == train_subset else 0


def _files_sha256(directory: str, names) -> str:
    """12 hex digits of the sha256 of the files (or folders of files) ``names`` that ``directory`` holds;
    ``none`` when it holds none of them."""
    digest, found = hashlib.sha256(), False
    for name in names:
        path = os.path.join(directory, name)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(root, file) for root, _, files in os.walk(path) for file in files)
        for file in files:
            digest.update(f"{os.path.relpath(file, directory)} {file_sha256(file)}\n".encode())
            found = True
    return digest.hexdigest()[:12] if found else "none"


def _format_version(metadata: Dict) -> str:
    """The segatron-preprocess release whose format the directory's manifests have."""
    if not metadata:
        return "fairseq-preprocess"
    entries = [entry for entry in metadata.get(SPLITS, {}).values() if isinstance(entry, dict)]
    if any(SHA256 in entry for entry in entries):
        return "0.3.0"
    return "0.2.0" if any(STATE in entry for entry in entries) else "0.1.0"


def binarized_with(directory: str) -> Dict[str, str]:
    """What the corpus ``directory`` was binarized with, as a refusal names it: the dictionary, sentence
    splitter and sub-word model (sha256 prefixes), the stream style and the format's release."""
    metadata = read_metadata(directory)
    splitter = metadata.get(SENTENCE_SPLITTER)
    bpe = metadata.get(BPE, NO_BPE)
    model = _files_sha256(directory, (SENTENCEPIECE_FILE, WORDPIECE_FILE))
    subwords = bpe if bpe == NO_BPE else f"{bpe} sha256 {model}"
    if metadata.get(BPE_CASED):
        subwords += ", cased"
    return {
        "dictionary": f"dict.txt sha256 {_files_sha256(directory, (DICT_FILE,))}",
        "sentence splitter": "sha256 " + (splitter["sha256"][:12] if isinstance(splitter, dict) and "sha256" in splitter
                                          else _files_sha256(directory, (PUNKT_DIR, LEGACY_PUNKT_FILE))),
        "sub-word model": subwords,
        "stream style": metadata.get(STREAM_STYLE, "fairseq"),
        "format": _format_version(metadata),
    }


def check_shards_agree(data: str, option: str) -> None:
    """Refuse (``SplitFileError``) shards of ``data`` that were binarized with another dictionary, sentence
    splitter, sub-word model, stream style or format than the first; ``option``: what named ``data``."""
    shards = data_shards(data)
    if len(shards) < 2:
        return
    first = binarized_with(shards[0])
    for shard in shards[1:]:
        other = binarized_with(shard)
        for what, value in first.items():
            if other[what] != value:
                raise SplitFileError(
                    f"{shard}: binarized with another {what} than {shards[0]} ({other[what]}, not {value}): the "
                    f"shards of {option} must share one dictionary, sentence splitter, sub-word model, stream style "
                    f"and format; binarize each with the first's (segatron-preprocess --srcdict, "
                    f"--sentence-splitter, --bpe-model)")
