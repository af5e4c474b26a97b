"""Where sentences and paragraphs start, read from a batch's segment indexes.

An encoder input carries each token's paragraph, sentence and token index
(``segments.layout``); models that count boundaries instead of reading the
indexes (the cloze model's backward tower, XLNet's Segatron distances in
fine-tuning) recover the starts here. A sentence starts where the token index
does not go on by one from the position before, or where the sentence or
paragraph index changes; a paragraph starts where that new sentence is
sentence 0 or the paragraph index changes (a SQuAD window may begin its
context in the middle of a paragraph, and even at a token index that goes on
from the question's). A position that repeats every index of the one before
it is a copy (a ``[CLS]`` or ``<s>`` taking its neighbour's indexes, a
separator) and starts nothing; position 0 and padding start nothing either.

    position              0      1    2    3    4      5    6      7
    token               [CLS]    a    b    .  [SEP]    c    .    [SEP]
    paragraph             0      0    0    0    0      1    1      1
    sentence              0      0    0    0    0      0    0      0
    token index           0      0    1    2    2      0    1      1
    copy                  -      x    -    -    x      -    -      x
    sentence start        -      -    -    -    -      x    -      -
    paragraph start       -      -    -    -    -      x    -      -

Clipping an index to its table (``segments.fit_to_table``) merges values and
never makes one change, and the token index is never clipped within a block,
so the starts stay right where the paragraph and sentence indexes were
clipped (but for a one-token sentence whose paragraph and sentence indexes
are both clipped: it looks like a copy).
"""
from dataclasses import dataclass
from typing import Dict, Optional

import torch
from torch import Tensor


def _previous(values: Tensor, fill) -> Tensor:
    """(B, T) -> (B, T): column j holds column j - 1, column 0 ``fill``."""
    return torch.cat([torch.full_like(values[:, :1], fill), values[:, :-1]], dim=1)


@dataclass
class IndexBoundaries:
    """(B, T) bool each: the real tokens (not padding), the copies, the sentence and paragraph starts."""

    real: Tensor
    copy: Tensor
    sentence_start: Tensor
    paragraph_start: Tensor


def index_boundaries(indexes: Dict[str, Tensor], padding: Optional[Tensor]) -> IndexBoundaries:
    """``indexes``: (B, T) ``paragraph``, ``sentence`` and ``token`` index of
    right-padded inputs; ``padding``: (B, T), True at padding, or None."""
    paragraph, sentence, token = indexes["paragraph"], indexes["sentence"], indexes["token"]
    real = torch.ones_like(token, dtype=torch.bool) if padding is None else ~padding
    follows_real = real & _previous(real, False)
    same_paragraph = paragraph.eq(_previous(paragraph, 0))
    same_sentence = same_paragraph & sentence.eq(_previous(sentence, 0))
    copy = follows_real & same_sentence & token.eq(_previous(token, 0))
    sentence_start = follows_real & ~copy & (token.ne(_previous(token, 0) + 1) | ~same_sentence)
    paragraph_start = sentence_start & (sentence.eq(0) | ~same_paragraph)
    return IndexBoundaries(real, copy, sentence_start, paragraph_start)
