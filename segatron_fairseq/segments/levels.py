"""The segment levels, their index tables and the rule that fits indexes into
a table.

A token has one index per level (``corpus_format.INDEX_NAMES``): its token in
its sentence, its sentence in its paragraph, its paragraph in its document.
``LEVELS`` orders them from the innermost, the order of the parts of
Segatron-XL's relative positions (Eq. 3); ``SEGMENT_LEVELS`` are the levels
above the token, whose starts Segatron-XL counts. ``TABLE_SIZES`` are the rows
of SegaBERT's index tables (the paper's 50 / 100 / 256), in the corpus's
order.
"""
from typing import Tuple

import numpy as np

from segatron_preprocess.corpus_format import INDEX_NAMES

LEVELS = INDEX_NAMES[::-1]  # ("token", "sentence", "paragraph")
SEGMENT_LEVELS = LEVELS[1:]  # ("sentence", "paragraph")
TABLE_SIZES = {"paragraph": 50, "sentence": 100, "token": 256}


def fit_to_table(values: np.ndarray, rows: int) -> Tuple[np.ndarray, bool, bool]:
    """The paper's rule for indexes (N,) of one level that reach past a table
    of ``rows`` rows: shift all of them down as far as needed, not below 0,
    then clip. Returns the values and whether they were shifted / clipped.

        rows 50:  [48 49 50 51] -> [46 47 48 49]  shifted
                  [ 0  3 60]    -> [ 0  3 49]     clipped (0 cannot move)
                  [ 5 60]       -> [ 0 49]        shifted and clipped

    An input that holds a 0 of the level is only clipped: every fine-tuning
    layout holds one (a context or article starts at sentence 0 and its first
    paragraph; a question is paragraph 0, its tokens from 0)."""
    shifted = clipped = False
    if values.size and values.max() >= rows:
        shift = min(int(values.max()) - (rows - 1), int(values.min()))
        if shift > 0:
            values, shifted = values - shift, True
        if values.max() >= rows:
            values, clipped = np.minimum(values, rows - 1), True
    return values, shifted, clipped
