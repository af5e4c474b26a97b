"""A Transformer-XL vocabulary (one word a line, id = line number, ``<eos>``
among the words) as a fairseq ``Dictionary``, keeping the adaptive softmax's
bands: fairseq puts ``<s> <pad> </s> <unk>`` first, so every word moves up by
the specials that the vocabulary lacks, and so do the cutoffs::

    theirs   <eos> w1 w2 ... w99 | w100 ...          cutoffs 100, 200
    fairseq  <s> <pad> </s> <unk> w1 ... w99 | w100   cutoffs 103, 203

Their ``<eos>`` becomes ``</s>`` and their ``<unk>`` (if any) ``<unk>``; both
must lie in the head band. The specials they lack sit in the head band too and
get probability 0 (see ``adaptive_softmax.py``).
"""
from dataclasses import dataclass
from typing import List

import torch
from fairseq.data import Dictionary

from segatron_preprocess.inputs import read_utf8


@dataclass
class MappedVocabulary:
    dictionary: Dictionary
    index: torch.Tensor  # (n_token,) long: their id -> fairseq id
    cutoffs: List[int]  # fairseq's adaptive softmax cutoffs
    missing: List[int]  # fairseq ids of the specials their vocabulary lacks


def read_words(path: str) -> List[str]:
    """The first field of each line (Transformer-XL's vocab files; a count may follow)."""
    words = [line.split()[0] for line in read_utf8(path).split("\n") if line.strip()]
    if len(set(words)) != len(words):
        raise ValueError(f"{path}: a word appears twice")
    return words


def map_vocabulary(words: List[str], cutoffs: List[int], source: str) -> MappedVocabulary:
    """``words`` in their id order; ``cutoffs`` their band boundaries (without
    the vocabulary size). ``source`` names the file in errors."""
    if "<eos>" not in words:
        raise ValueError(f"{source}: no <eos> among the {len(words)} words")
    dictionary = Dictionary()
    specials = {"<eos>": dictionary.eos(), "<unk>": dictionary.unk()}
    for word in words:
        if word not in specials:
            dictionary.add_symbol(word, n=len(words) - len(dictionary))  # counts fall: dict.txt keeps the order
    index = torch.tensor([specials[w] if w in specials else dictionary.index(w) for w in words])
    missing = sorted(set(range(dictionary.nspecial)) - set(index.tolist()))
    shift = len(missing)
    mapped_cutoffs = [c + shift for c in cutoffs]
    for name in ("<eos>", "<unk>"):
        if name in words and cutoffs and words.index(name) >= cutoffs[0]:
            raise ValueError(f"{source}: {name} is word {words.index(name)}, outside the head band "
                             f"(0..{cutoffs[0] - 1}); fairseq's {name} is in it")
    bands = torch.bucketize(torch.arange(len(words)), torch.tensor(cutoffs), right=True)
    mapped_bands = torch.bucketize(index, torch.tensor(mapped_cutoffs), right=True)
    if not torch.equal(bands, mapped_bands):
        raise ValueError(f"{source}: the words do not keep their adaptive softmax bands in fairseq's order")
    return MappedVocabulary(dictionary, index, mapped_cutoffs, missing)
