"""SpanBERT's span masking, and our sentence-span variant, of masked-LM examples.

``mask_span="span"`` (SpanBERT, Joshi et al. 2020): spans of whole words whose
lengths (in words) are drawn from Geo(p) truncated to [1, max_span_length] and
renormalised, anchored at a word start (a token drawn uniformly among the
tokens of the words where a span of that length fits, as SpanBERT snaps a
uniform anchor to its word's start), until ``ceil(mask_prob * n)`` of the
example's n maskable tokens are masked. A span never overlaps or touches an
earlier one (there is always an unmasked token, or [CLS] / [SEP], on both
sides: its boundary); a span that would pass the budget keeps only the whole
words that reach it.

``mask_span="sentence"`` (ours): whole sentences of the example (starts: token
index 0, or a new sentence / paragraph index), visited in a random order; each
is masked whole while it fits in what is left of the budget, the others are
skipped; if the budget is still not met after the visit, the first skipped
sentence is masked from its first word for as many whole words as reach it.

Both decide 80/10/10 per span (all its tokens ``<mask>``, all random, or all
kept; random symbols drawn uniformly from the dictionary's non-special
symbols other than ``<mask>``). [CLS] (bos), [SEP] (eos) and padding are never
masked. Each item is deterministic per (seed, epoch, index).

What the span boundary objective needs, per token (T,) of each item: a span is
a maximal run of masked tokens (s..e); each of its tokens i has the outer
boundary positions ``span_left`` = s - 1 and ``span_right`` = e + 1 and its
offset ``span_offset`` = i - s. Tokens with no such target have offset -1:
unmasked tokens, those past the first ``MAX_SPAN_TARGETS`` of their span
(SpanBERT's limit), and those of a span at the edge of an item with no
[CLS] / [SEP] there (no boundary token).
"""
import math
from functools import lru_cache
from typing import List, NamedTuple, Optional

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, Dictionary

MASK_SPAN_MODES = ("token", "span", "sentence")
MAX_SPAN_TARGETS = 15  # SpanBERT's position table of the boundary objective: the first 15 tokens of a span
MASK, RANDOM, KEEP = 0, 1, 2


class Span(NamedTuple):
    """Tokens ``start`` .. ``stop`` - 1 of an item, masked as one span
    (``truncated``: cut to the budget)."""

    start: int
    stop: int
    truncated: bool = False


def span_length_probabilities(p: float, max_length: int) -> np.ndarray:
    """P(length = 1 .. max_length): Geo(p) truncated and renormalised."""
    lengths = np.arange(1, max_length + 1)
    probabilities = p * (1 - p) ** (lengths - 1)
    return probabilities / probabilities.sum()


def words_of(maskable: np.ndarray, begins_word: np.ndarray) -> np.ndarray:
    """(W, 2) start and stop of each word: a maskable token that begins a word,
    or follows a token that is not maskable, starts one; it runs until the next
    start or the next token that is not maskable."""
    follows_other = np.concatenate([[True], ~maskable[:-1]])
    starts = np.flatnonzero(maskable & (begins_word | follows_other))
    breaks = np.append(np.flatnonzero(~maskable | begins_word | follows_other), len(maskable))
    stops = breaks[np.searchsorted(breaks, starts, side="right")]
    return np.stack([starts, stops], axis=1)


def draw_spans(rng: np.random.Generator, words: np.ndarray, length: int, budget: int,
               probabilities: np.ndarray) -> List[Span]:
    """SpanBERT's spans over ``words`` ((W, 2) of an item of ``length``
    tokens) until ``budget`` tokens are masked, in the order drawn. A length
    with no place left is drawn again; masking stops early only when not even
    one word has a place."""
    masked = np.zeros(length + 1, dtype=bool)  # one spare slot: the token after the last
    contiguous = np.append(words[1:, 0] == words[:-1, 1], False)  # word w+1 follows word w directly
    sizes = words[:, 1] - words[:, 0]
    cumulative = np.cumsum(probabilities)
    spans, count = [], 0
    while count < budget:
        unmasked = ~masked[words[:, 0]]
        span_words = min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")),
                         len(probabilities) - 1) + 1
        anchors = _anchors(unmasked, contiguous, words, masked, span_words)
        if not anchors.size:
            if not _anchors(unmasked, contiguous, words, masked, 1).size:
                break
            continue
        tokens = np.cumsum(sizes[anchors])  # a token drawn uniformly among theirs, snapped to its word's start
        first = int(anchors[np.searchsorted(tokens, rng.integers(tokens[-1]), side="right")])
        chain = np.cumsum(sizes[first:first + span_words])
        keep = min(span_words, int(np.searchsorted(chain, budget - count)) + 1)
        start, stop = int(words[first, 0]), int(words[first + keep - 1, 1])
        masked[start:stop] = True
        count += stop - start
        spans.append(Span(start, stop, keep < span_words))
    return spans


def _anchors(unmasked, contiguous, words, masked, span_words: int) -> np.ndarray:
    """The first words of every place for ``span_words`` whole words."""
    n = len(words) - span_words + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    ok = np.concatenate([[0], np.cumsum(~unmasked)])
    links = np.concatenate([[0], np.cumsum(~contiguous)])
    first = np.arange(n)
    last = first + span_words - 1
    fits = (ok[last + 1] - ok[first] == 0) & (links[last] - links[first] == 0)
    fits &= (words[first, 0] == 0) | ~masked[words[first, 0] - 1]
    fits &= ~masked[words[last, 1]]
    return first[fits]


def sentence_spans(rng: np.random.Generator, words: np.ndarray, sentence_starts: np.ndarray,
                   budget: int) -> List[Span]:
    """Our sentence spans: whole sentences (each from a word of
    ``sentence_starts``, a (W,) flag per word, to the next such word) in a
    random order while they fit in what is left of ``budget``, then the first
    sentence skipped, from its first word, for the whole words that reach it."""
    first_words = np.flatnonzero(sentence_starts)
    if not first_words.size:
        return []
    last_words = np.append(first_words[1:], len(words))
    sizes = words[:, 1] - words[:, 0]
    spans, count, skipped = [], 0, None
    for k in rng.permutation(len(first_words)):
        size = int(sizes[first_words[k]:last_words[k]].sum())
        if count + size <= budget:
            spans.append(Span(int(words[first_words[k], 0]), int(words[last_words[k] - 1, 1])))
            count += size
        elif skipped is None:
            skipped = k
        if count >= budget:
            break
    if count < budget and skipped is not None:
        first = first_words[skipped]
        chain = np.cumsum(sizes[first:last_words[skipped]])
        keep = int(np.searchsorted(chain, budget - count)) + 1
        spans.append(Span(int(words[first, 0]), int(words[first + keep - 1, 1]), True))
    return spans


def boundary_targets(masked: np.ndarray):
    """(span_left, span_right, span_offset), (T,) each, of the maximal runs of
    ``masked`` (T,) (the module's docstring)."""
    length = len(masked)
    left = np.zeros(length, dtype=np.int64)
    right = np.zeros(length, dtype=np.int64)
    offset = np.full(length, -1, dtype=np.int64)
    edges = np.diff(np.concatenate([[0], masked.astype(np.int8), [0]]))
    for start, stop in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
        if start == 0 or stop == length:
            continue  # no boundary token on that side
        left[start:stop], right[start:stop] = start - 1, stop
        targets = min(stop - start, MAX_SPAN_TARGETS)
        offset[start:start + targets] = np.arange(targets)
    return left, right, offset


class SpanMaskDataset(BaseWrapperDataset):
    """Span or sentence masking (module docstring) of ``dataset``, whose items
    are (T,) token tensors or dicts with ``tokens`` (and, for sentences,
    ``paragraph``, ``sentence`` and ``token`` indexes, as
    ``DocumentExampleDataset`` gives). Items: dicts of (T,) tensors
    ``source``, ``target`` (padding where not masked), ``span_left``,
    ``span_right``, ``span_offset``.

    ``begins_word``: (len(dictionary),) 1 for symbols that begin a word
    (``masking.whole_word_starts``); None: every symbol is a word."""

    def __init__(self, dataset, dictionary: Dictionary, mask_idx: int, seed: int, mode: str = "span",
                 mask_prob: float = 0.15, leave_unmasked_prob: float = 0.1, random_token_prob: float = 0.1,
                 geometric_p: float = 0.2, max_span_length: int = 10, begins_word: Optional[torch.Tensor] = None):
        super().__init__(dataset)
        if mode not in ("span", "sentence"):
            raise ValueError(f"--mask-span {mode}: SpanMaskDataset masks spans or sentences")
        if not 0.0 < mask_prob < 1.0:
            raise ValueError(f"--mask-prob {mask_prob}: must be between 0 and 1")
        if leave_unmasked_prob < 0 or random_token_prob < 0 or leave_unmasked_prob + random_token_prob > 1.0:
            raise ValueError("--leave-unmasked-prob and --random-token-prob must be >= 0 and add up to at most 1")
        if not 0.0 < geometric_p <= 1.0:
            raise ValueError(f"--span-geometric-p {geometric_p}: must be in (0, 1]")
        if max_span_length < 1:
            raise ValueError(f"--max-span-length {max_span_length}: must be at least 1")
        self.mode, self.seed, self.mask_idx = mode, seed, mask_idx
        self.pad, self.protected = dictionary.pad(), np.array([dictionary.bos(), dictionary.eos(), dictionary.pad()])
        self.mask_prob = mask_prob
        self.kinds = np.array([1.0 - leave_unmasked_prob - random_token_prob, random_token_prob, leave_unmasked_prob])
        self.probabilities = span_length_probabilities(geometric_p, max_span_length)
        self.begins_word = None if begins_word is None else begins_word.numpy().astype(bool)
        self.random_symbols = np.array([i for i in range(dictionary.nspecial, len(dictionary)) if i != mask_idx])
        self.epoch = 0

    def set_epoch(self, epoch, **unused):
        super().set_epoch(epoch)
        self.epoch = epoch

    def __getitem__(self, index: int):
        return self._masked(self.epoch, index)

    @lru_cache(maxsize=8)  # noqa: B019  (as MaskTokensDataset: the fields of one item read it once)
    def _masked(self, epoch: int, index: int):
        item = self.dataset[index]
        tokens = (item["tokens"] if isinstance(item, dict) else item).numpy()
        rng = np.random.default_rng([self.seed, epoch, index])
        maskable = ~np.isin(tokens, self.protected)
        begins = np.ones(len(tokens), dtype=bool) if self.begins_word is None else self.begins_word[tokens]
        if self.mode == "sentence":
            starts = _sentence_starts(item, len(tokens))
            words = words_of(maskable, begins | starts)
        else:
            words = words_of(maskable, begins)
        budget = math.ceil(self.mask_prob * int(maskable.sum()))
        if self.mode == "sentence":
            first_words = starts[words[:, 0]]
            first_words[:1] = True
            spans = sentence_spans(rng, words, first_words, budget)
        else:
            spans = draw_spans(rng, words, len(tokens), budget, self.probabilities)
        source, target = tokens.copy(), np.full(len(tokens), self.pad, dtype=tokens.dtype)
        masked = np.zeros(len(tokens), dtype=bool)
        for span, kind in zip(spans, rng.choice(3, size=len(spans), p=self.kinds)):
            piece = slice(span.start, span.stop)
            masked[piece], target[piece] = True, tokens[piece]
            if kind == MASK:
                source[piece] = self.mask_idx
            elif kind == RANDOM:
                source[piece] = rng.choice(self.random_symbols, size=span.stop - span.start)
        left, right, offset = boundary_targets(masked)
        return {"source": torch.from_numpy(source), "target": torch.from_numpy(target),
                "span_left": torch.from_numpy(left), "span_right": torch.from_numpy(right),
                "span_offset": torch.from_numpy(offset)}


def _sentence_starts(item, length: int) -> np.ndarray:
    """(T,) True where a sentence begins: token index 0, or a sentence or
    paragraph index other than the token before's."""
    if not isinstance(item, dict) or "token" not in item:
        raise ValueError("--mask-span sentence needs examples with sentence indexes (task segabert_mlm)")
    starts = item["token"].numpy() == 0
    for name in ("sentence", "paragraph"):
        values = item[name].numpy()
        starts[1:] |= values[1:] != values[:-1]
    starts[0] = True
    return starts[:length]
