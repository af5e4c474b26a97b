"""One input of the encoders (SegaBERT and its BERT baseline): texts joined as
``[CLS] text_0 [SEP] text_1 [SEP] ...`` with every level's index and BERT's
token type at each position. The pre-training examples, every fine-tuning
layout and the hub's ``encode`` are built by ``layout_of_texts``; they differ
only in the texts and the indexes they give them.

- [CLS] takes the indexes of the first text's first token (0 when that text is
  empty), each [SEP] those of its left neighbour;
- the token type of a text's tokens is the text's number (BERT's segment A /
  B); [CLS] and each [SEP], like their indexes, take their neighbour's;
- then each level's indexes are fitted to its table (``levels.fit_to_table``).

Example: text 0 "who ?" (paragraph 0, sentence 0), text 1 "A b . C d ."
(paragraph 1, two sentences), token indexes counted in each sentence:

    token     [CLS] who ?  [SEP] A  b  .  C  d  .  [SEP]
    paragraph   0    0  0    0   1  1  1  1  1  1    1
    sentence    0    0  0    0   0  0  0  1  1  1    1
    token       0    0  1    1   0  1  2  0  1  2    2
    type        0    0  0    0   1  1  1  1  1  1    1
"""
from dataclasses import dataclass
from typing import Dict, List, Mapping, NamedTuple, Sequence

import numpy as np

from segatron_preprocess.corpus_format import INDEX_NAMES

from .levels import TABLE_SIZES, fit_to_table


class Text(NamedTuple):
    """A text to lay out: its token ids (N,) and each level's index of them,
    (N,) each (level name -> values)."""

    ids: Sequence[int]
    indexes: Mapping[str, Sequence[int]]


@dataclass
class Layout:
    """One encoder input, (T,) int64 arrays: token ids, each level's index (in
    the corpus's order, paragraph first) and the token type; whether some
    level's indexes were shifted / clipped to fit its table."""

    tokens: np.ndarray
    indexes: Dict[str, np.ndarray]
    token_type: np.ndarray
    shifted: bool
    clipped: bool


def _with_separators(columns: List[np.ndarray]) -> np.ndarray:
    """The texts' values (one (N_k,) array per text) with [CLS] first and a
    [SEP] after each text, each taking its neighbour's value (see the module doc)."""
    first = columns[0][:1] if len(columns[0]) else np.zeros(1, dtype=np.int64)
    pieces, last = [first], first
    for values in columns:
        last = values[-1:] if len(values) else last
        pieces += [values, last]
    return np.concatenate(pieces)


def layout_of_texts(texts: Sequence[Text], bos: int, eos: int, table_sizes: Mapping[str, int]) -> Layout:
    """``[CLS] texts[0] [SEP] texts[1] [SEP] ...`` (``bos`` is [CLS], ``eos``
    [SEP]) with the indexes fitted to tables of ``table_sizes`` rows."""
    if not texts:
        raise ValueError("a layout needs at least one text")
    ids = [np.asarray(text.ids, dtype=np.int64) for text in texts]
    tokens = np.concatenate([[bos]] + [np.append(values, eos) for values in ids]).astype(np.int64)
    token_type = _with_separators([np.full(len(values), number, dtype=np.int64) for number, values in enumerate(ids)])
    indexes, shifted, clipped = {}, False, False
    for level in INDEX_NAMES:
        column = _with_separators([np.asarray(text.indexes[level], dtype=np.int64) for text in texts])
        indexes[level], was_shifted, was_clipped = fit_to_table(column, table_sizes[level])
        shifted, clipped = shifted or was_shifted, clipped or was_clipped
    return Layout(tokens, indexes, token_type, shifted, clipped)


def shorten_longest(texts: Sequence[Sequence[int]], budget: int) -> List[List[int]]:
    """The texts, the longest one (the first of equals) losing its last token
    until they hold at most ``budget`` tokens together."""
    texts = [list(text) for text in texts]
    while sum(len(text) for text in texts) > budget:
        longest = max(range(len(texts)), key=lambda k: len(texts[k]))
        texts[longest].pop()
    return texts


def layout_of_run(tokens: np.ndarray, indexes: Dict[str, np.ndarray], bos: int, eos: int, max_tokens: int,
                  index_limits: Dict[str, int]) -> Layout:
    """A pre-training example from a run of a split (tokens and their
    indexes, (N,) each): ``</s>`` left out, cut to ``max_tokens`` with [CLS]
    (``bos``) first and [SEP] (``eos``) last, as one text of
    ``layout_of_texts`` (indexes fitted to tables of ``index_limits`` rows)."""
    keep = tokens != eos
    budget = max_tokens - 2
    text = Text(tokens[keep][:budget], {name: values[keep][:budget] for name, values in indexes.items()})
    return layout_of_texts([text], bos, eos, index_limits)


class ParagraphsLayout(NamedTuple):
    """One encoder input whose texts are paragraphs (``layout_of_paragraphs``),
    (T,) lists: token ids and each level's index."""

    tokens: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]


def layout_of_paragraphs(texts: Sequence[Sequence[int]], bos: int, eos: int, max_positions: int,
                         max_token_index: int) -> ParagraphsLayout:
    """The layout of ``texts`` as text k = paragraph k of one sentence, each
    token's index counted from the text's start. The longest text is
    shortened until the example fits ``max_positions``; token indexes above
    the table (``max_token_index`` rows) are clipped."""
    texts = shorten_longest(texts, max_positions - 1 - len(texts))
    layout = layout_of_texts([Text(text, {"paragraph": [number] * len(text), "sentence": [0] * len(text),
                                          "token": range(len(text))}) for number, text in enumerate(texts)],
                             bos, eos, {**TABLE_SIZES, "token": max_token_index})
    return ParagraphsLayout(layout.tokens.tolist(), *(layout.indexes[level].tolist()
                                                      for level in ("paragraph", "sentence", "token")))
