"""The segment indexes the cloze model's backward tower reads.

The forward tower reads each token's paragraph, sentence and token index
counted from the start of the block (``data.cloze_blocks``): at j they
depend only on the sentence ends before j. Read by the backward tower,
those indexes would betray the token being predicted: the query for token i
reads the backward state B_{i+1}, and the index of token i+1 changes
exactly when token i ends a sentence. So the backward tower reads the mirror
image: each level counted from the right end of the block (paragraph ends
after the token; sentence ends after it in its paragraph; tokens after it in
its sentence), and at position j the counts of token j + 1 (0 at the last
position). B_{i+1} then depends on sentence ends at i + 2 or later only,
which a sentence splitter decides from tokens i + 1 and later (it looks one
token to each side of a boundary).

One block, one paragraph (each ``<s>`` takes its neighbour's indexes)::

    position                   0    1    2    3    4    5    6    7
    token                     <s>   A    b    .    C    d    .   <s>
    sentence (forward)         0    0    0    0    1    1    1    1
    token (forward)            0    0    1    2    0    1    2    2
    sentence, from the right   1    1    1    1    0    0    0    0
    token, from the right      2    2    1    0    2    1    0    0
    backward sentence          1    1    1    0    0    0    0    0
    backward token             2    1    0    2    1    0    0    0

(the last two rows: the two above read one position to the right). A
level's count from the right is its value at the last position of its group
(the block for paragraphs, the paragraph for sentences, the sentence for
tokens) minus its own value.
"""
from typing import Dict, Optional

import torch
from torch import Tensor

from segatron_preprocess.corpus_format import INDEX_NAMES


def _shift_right(values: Tensor, fill) -> Tensor:
    """(B, T) -> (B, T): column j holds column j - 1, column 0 ``fill``."""
    return torch.cat([torch.full_like(values[:, :1], fill), values[:, :-1]], dim=1)


def backward_tower_indexes(indexes: Dict[str, Tensor], padding: Optional[Tensor]) -> Dict[str, Tensor]:
    """``indexes``: the forward tower's (B, T) index of each level of
    ``INDEX_NAMES`` (paragraph, sentence, token), right padded; ``padding``:
    (B, T), True at padding, or None. Returns the backward tower's (B, T)
    index of each level (0 at padding)."""
    first = indexes[INDEX_NAMES[0]]
    real = torch.ones_like(first, dtype=torch.bool) if padding is None else ~padding
    # right to left: each row flipped, so a group's last position comes first
    real = real.flip(1)
    previous_real = _shift_right(real, False)
    columns = torch.arange(first.size(1), device=first.device).expand_as(first)
    group_start = real & ~previous_real
    backward = {}
    for level in INDEX_NAMES:
        values = indexes[level].flip(1)
        start_column = torch.where(group_start, columns, 0).cummax(dim=1).values
        from_right = (values.gather(1, start_column) - values).masked_fill(~real, 0).flip(1)
        backward[level] = torch.cat([from_right[:, 1:], torch.zeros_like(from_right[:, :1])], dim=1)
        # a finer level's groups also start where this level's value changes
        group_start = group_start | (real & previous_real & values.ne(_shift_right(values, 0)))
    return backward
