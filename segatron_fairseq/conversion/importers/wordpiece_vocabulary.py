"""A WordPiece ``vocab.txt`` (one token a line, id = line number) as a fairseq
dictionary for the masked-LM tasks, which append ``<mask>`` to ``dict.txt``::

    BERT     [PAD] [UNK] [CLS] [SEP] [MASK] the of ...      ids 0 1 2 3 4 5 6
    fairseq  <s> <pad> </s> <unk> the of ... <mask>         [CLS] -> <s>, [PAD] -> <pad>,
                                                            [SEP] -> </s>, [UNK] -> <unk>,
                                                            [MASK] -> <mask> (last)

The other tokens keep their order, so ``dict.txt`` lists them as vocab.txt does.
"""
from dataclasses import dataclass
from typing import Dict, List

import torch
from fairseq.data import Dictionary

from segatron_fairseq.conversion.bert_names import BERT_SPECIAL_NAMES
from segatron_fairseq.segments import MASK_SYMBOL

BERT_SPECIALS = tuple(BERT_SPECIAL_NAMES.values())


@dataclass
class MappedWordPiece:
    dictionary: Dictionary  # dict.txt's symbols (without <mask>, which the task appends)
    index: torch.Tensor  # (n_token,) long: their id -> fairseq id (<mask> included)


def read_wordpiece_vocab(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    while tokens and not tokens[-1]:
        tokens.pop()
    seen = set()
    for token in tokens:
        if token in seen:
            raise ValueError(f"{path}: token {token!r} appears twice")
        seen.add(token)
    if any(not t or any(c.isspace() for c in t) for t in tokens):
        raise ValueError(f"{path}: an empty line or a token with white space inside the vocabulary")
    return tokens


def map_wordpiece(tokens: List[str], source: str, special_names: Dict[str, str] = BERT_SPECIAL_NAMES,
                  naming: str = "BERT's") -> MappedWordPiece:
    """``tokens`` (their vocabulary in id order) as a fairseq dictionary:
    ``special_names`` maps our special symbols to theirs (each must be among
    ``tokens``; ``MASK_SYMBOL``, when named, is the one the masked-LM tasks
    append after dict.txt); the other tokens keep their order. ``naming``
    names their specials in the error."""
    theirs = tuple(special_names.values())
    missing = [s for s in theirs if s not in tokens]
    if missing:
        raise ValueError(f"{source}: {naming} {', '.join(missing)} not among the {len(tokens)} tokens")
    dictionary = Dictionary()
    reserved = set(dictionary.symbols) | ({MASK_SYMBOL} & special_names.keys())
    clashing = [t for t in tokens if t in reserved and t not in theirs]
    if clashing:
        raise ValueError(f"{source}: {clashing[0]} is one of fairseq's special symbols")
    for token in tokens:
        if token not in theirs:
            dictionary.add_symbol(token, n=len(tokens) - len(dictionary))  # counts fall: dict.txt keeps the order
    specials = {their: dictionary.index(ours) if ours != MASK_SYMBOL else len(dictionary)
                for ours, their in special_names.items()}
    index = torch.tensor([specials[t] if t in specials else dictionary.index(t) for t in tokens])
    return MappedWordPiece(dictionary, index)
