"""ALBERT's sentence-order prediction (SOP) examples from the document sampler.

Each example is a run of whole sentences of one document drawn as the masked-LM
examples are (``DocumentExampleDataset``, one token fewer: the second [SEP]),
split into A and B at a sentence boundary drawn uniformly among those inside
the run, and laid out ``[CLS] A [SEP] B [SEP]`` (label 0) or, with probability
1/2, ``[CLS] B [SEP] A [SEP]`` (label 1), token types 0 / 1 as BERT's. A run of
one sentence is split at a token drawn uniformly inside it (ours: ALBERT
instead pairs it with a sentence of another document labelled 1, which would
also let the topic give the label away).

The indexes follow the PRESENTED order, not the document's: the first text's
first token takes the run's first paragraph and sentence indexes (the same for
both orders), the second text starts a new paragraph (the first text's last +
1) at sentence 0, and inside each text paragraphs, sentences and tokens are
counted afresh from its start. So a swapped pair never shows decreasing
indexes, and the indexes depend only on the presented texts' own structure
(where their sentences and paragraphs break), which a swap does not change:
the index streams alone cannot tell the two labels apart.

Split and swap are drawn at ``set_epoch`` from a generator seeded with (seed,
epoch), so an example depends only on (seed, epoch, index).
"""
from typing import Dict, List, Tuple

import numpy as np
import torch

from segatron_fairseq.segments import Text, layout_of_texts

from .document_examples import DocumentExampleDataset


def renumbered(indexes: Dict[str, np.ndarray], first_paragraph: int, first_sentence: int) -> Dict[str, np.ndarray]:
    """A text's indexes counted afresh from its start (its (N,) document
    indexes in, the same out): paragraphs from ``first_paragraph``, sentences
    from ``first_sentence`` in its first paragraph and from the document's
    count in the later ones (they are whole), tokens from 0 in its first
    sentence."""
    paragraph, sentence, token = (np.asarray(indexes[name], dtype=np.int64)
                                  for name in ("paragraph", "sentence", "token"))
    if len(paragraph) == 0:
        return {name: np.zeros(0, dtype=np.int64) for name in ("paragraph", "sentence", "token")}
    new_paragraph = np.concatenate([[False], paragraph[1:] != paragraph[:-1]])
    new_sentence = new_paragraph | np.concatenate([[False], sentence[1:] != sentence[:-1]])
    in_first_paragraph = np.cumsum(new_paragraph) == 0
    in_first_sentence = np.cumsum(new_sentence) == 0
    return {"paragraph": first_paragraph + np.cumsum(new_paragraph),
            "sentence": np.where(in_first_paragraph, first_sentence + sentence - sentence[0], sentence),
            "token": np.where(in_first_sentence, token - token[0], token)}


def sentence_order_texts(tokens: np.ndarray, indexes: Dict[str, np.ndarray], split: int,
                         swap: bool) -> Tuple[Text, Text]:
    """The two texts of a run ((N,) tokens and document indexes, ``</s>``
    left out) cut at ``split`` (A = [0, split), B = [split, N)), in the
    presented order (B first when ``swap``), their indexes ``renumbered``: the
    first text from the run's first paragraph and sentence, the second from
    the next paragraph, sentence 0."""
    parts = [(tokens[:split], {k: v[:split] for k, v in indexes.items()}),
             (tokens[split:], {k: v[split:] for k, v in indexes.items()})]
    if swap:
        parts.reverse()
    first_paragraph = int(indexes["paragraph"][0]) if len(tokens) else 0
    first_sentence = int(indexes["sentence"][0]) if len(tokens) else 0
    texts: List[Text] = []
    for ids, document_indexes in parts:
        fresh = renumbered(document_indexes, first_paragraph, first_sentence)
        texts.append(Text(ids, fresh))
        if len(ids):
            first_paragraph = int(fresh["paragraph"][-1])
        first_paragraph, first_sentence = first_paragraph + 1, 0
    return texts[0], texts[1]


def split_point(token_index: np.ndarray, draw: float) -> int:
    """Where a run ((N,) token indexes within sentences) is cut, from a
    uniform ``draw`` in [0, 1): a sentence start other than the first, or,
    in a run of one sentence, a token other than the first (N = 1: at the end)."""
    starts = np.flatnonzero(token_index[1:] == 0) + 1
    if len(starts):
        return int(starts[int(draw * len(starts))])
    return 1 + int(draw * (len(token_index) - 1)) if len(token_index) > 1 else len(token_index)


class SentenceOrderDataset(DocumentExampleDataset):
    """SOP examples (see the module doc): items hold ``tokens``, the indexes,
    ``token_type``, ``sentence_order`` (0 in order, 1 swapped) and the
    ``shifted`` / ``clipped`` flags."""

    def __init__(self, corpus, bos: int, eos: int, max_tokens: int, index_limits: Dict[str, int], seed: int,
                 num_examples: int = 0):
        if max_tokens < 4:
            raise ValueError(f"--tokens-per-sample {max_tokens}: sentence-order examples need room for [CLS], "
                             "two [SEP] and a token (at least 4)")
        self.split_draw = self.swap = None
        super().__init__(corpus, bos, eos, max_tokens - 1, index_limits, seed, num_examples)

    def set_epoch(self, epoch: int):
        if epoch == self.epoch:
            return
        super().set_epoch(epoch)
        self._sizes += 1  # the second [SEP]
        rng = np.random.default_rng([self.seed, epoch, 1])
        self.split_draw = rng.random(self.num_examples)
        self.swap = rng.random(self.num_examples) < 0.5

    def __getitem__(self, index: int):
        table = self.table
        lo = table.starts[self.first_sentence[index]]
        hi = table.stops[self.end_sentence[index] - 1]
        keep = self.tokens[lo:hi] != self.eos
        budget = self.max_tokens - 2
        tokens = self.tokens[lo:hi][keep][:budget]
        indexes = {name: values[lo:hi][keep][:budget] for name, values in self.indexes.items()}
        split = split_point(indexes["token"], self.split_draw[index])
        swap = bool(self.swap[index])
        layout = layout_of_texts(sentence_order_texts(tokens, indexes, split, swap), self.bos, self.eos,
                                 self.index_limits)
        item = {"tokens": torch.from_numpy(layout.tokens), "token_type": torch.from_numpy(layout.token_type),
                **{name: torch.from_numpy(values) for name, values in layout.indexes.items()},
                "sentence_order": int(swap)}
        item["shifted"], item["clipped"] = int(layout.shifted), int(layout.clipped)
        return item
