"""A WordPiece ``vocab.txt`` (one token a line, id = line number) as a fairseq
dictionary for the masked-LM tasks, which append ``<mask>`` to ``dict.txt``::

    BERT     [PAD] [UNK] [CLS] [SEP] [MASK] the of ...      ids 0 1 2 3 4 5 6
    fairseq  <s> <pad> </s> <unk> the of ... <mask>         [CLS] -> <s>, [PAD] -> <pad>,
                                                            [SEP] -> </s>, [UNK] -> <unk>,
                                                            [MASK] -> <mask> (last)

The other tokens keep their order, so ``dict.txt`` lists them as vocab.txt does.
"""
from dataclasses import dataclass
from typing import List

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


def map_wordpiece(tokens: List[str], source: str) -> MappedWordPiece:
    missing = [s for s in BERT_SPECIALS if s not in tokens]
    if missing:
        raise ValueError(f"{source}: BERT's {', '.join(missing)} not among the {len(tokens)} tokens")
    dictionary = Dictionary()
    clashing = [t for t in tokens if t in dictionary.symbols or t == MASK_SYMBOL]
    if clashing:
        raise ValueError(f"{source}: {clashing[0]} is one of fairseq's special symbols")
    for token in tokens:
        if token not in BERT_SPECIALS:
            dictionary.add_symbol(token, n=len(tokens) - len(dictionary))  # counts fall: dict.txt keeps the order
    specials = {bert: dictionary.index(ours) if ours != MASK_SYMBOL else len(dictionary)
                for ours, bert in BERT_SPECIAL_NAMES.items()}
    index = torch.tensor([specials[t] if t in specials else dictionary.index(t) for t in tokens])
    return MappedWordPiece(dictionary, index)
