"""The segment indexes the cloze model's backward tower reads.

The forward tower reads each token's paragraph, sentence and token index
counted from the start of the block (``data.cloze_blocks``): at j they
depend only on the sentence ends before j. Read by the backward tower,
those indexes would betray the token being predicted: the query for token i
reads the backward state B_{i+1}, and the index of token i+1 changes
exactly when token i ends a sentence. So the backward tower reads the mirror
image: each level counted from the right end of the block (paragraph starts
after the token; sentence starts after it in its paragraph; tokens after it
in its sentence), and at position j the counts of position j + 1 (0 at the
last position). B_{i+1} then depends on sentence ends at i + 2 or later only.

One block, one paragraph (each ``<s>`` takes its neighbour's indexes)::

    position                   0    1    2    3    4    5    6    7
    token                     <s>   A    b    .    C    d    .   <s>
    sentence (forward)         0    0    0    0    1    1    1    1
    token (forward)            0    0    1    2    0    1    2    2
    sentences after            1    1    1    1    0    0    0    0
    tokens after               3    2    1    0    2    1    0    0
    backward sentence          1    1    1    0    0    0    0    0
    backward token             2    1    0    2    1    0    0    0

(the last two rows: the two above read one position to the right; the
first ``<s>`` counts as its sentence's first token in place of ``A``, which
copies it, and the count at position 0 is never read).

The boundaries (and the copies, which count no token) are those of
``modules.index_boundaries``; the counts themselves are clipped to ``limits``.
"""
from typing import Dict, Optional

import torch
from torch import Tensor

from .index_boundaries import index_boundaries


def _after_in_group(counted: Tensor, group: Tensor) -> Tensor:
    """(B, T) running counts and non-decreasing group ids -> how much the
    count still grows after each position within its group."""
    group_end = torch.zeros_like(counted).scatter_reduce(1, group, counted, "amax", include_self=False)
    return group_end.gather(1, group) - counted


def backward_tower_indexes(indexes: Dict[str, Tensor], padding: Optional[Tensor],
                           limits: Optional[Dict[str, int]] = None) -> Dict[str, Tensor]:
    """``indexes``: the forward tower's (B, T) ``paragraph``, ``sentence`` and
    ``token`` index, right padded; ``padding``: (B, T), True at padding, or
    None; ``limits``: a level's largest count (its table's rows - 1), if any.
    Returns the backward tower's (B, T) index of each level (0 at padding)."""
    boundaries = index_boundaries(indexes, padding)
    real = boundaries.real
    counts_token = real & ~boundaries.copy
    paragraphs_so_far = boundaries.paragraph_start.long().cumsum(1)
    sentences_so_far = boundaries.sentence_start.long().cumsum(1)
    after = {
        "paragraph": paragraphs_so_far[:, -1:] - paragraphs_so_far,
        "sentence": _after_in_group(sentences_so_far, paragraphs_so_far),
        "token": _after_in_group(counts_token.long().cumsum(1), sentences_so_far),
    }
    backward = {}
    for level, counts in after.items():
        counts = counts.masked_fill(~real, 0)
        if limits and limits.get(level) is not None:
            counts = counts.clamp(max=limits[level])
        backward[level] = torch.cat([counts[:, 1:], torch.zeros_like(counts[:, :1])], dim=1)
    return backward
