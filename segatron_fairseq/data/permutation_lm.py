"""XLNet's permutation language modelling data: span-based targets, the
factorization order, ``perm_mask`` and ``target_mapping``, as XLNet's
original code samples them (its ``_sample_mask`` and ``_local_perm``).

A sample is ``seq_len`` positions of a stream: the first ``reuse_len`` (the
reuse part, which the model caches as memory for the next sample) and the
rest. Each part is a block with its own targets and order; the reuse part
cannot see the rest, the rest sees all of the reuse part, so the cached
states never depend on what comes after them.

Within a block:

- targets (``sample_targets``): spans of n = 1..``max_gram`` tokens (P(n) ~
  1/n), each with a context of ``alpha * n / beta`` untouched tokens split at
  random around it, the span's start moved to a word start, until the block's
  budget of round(length / K) targets is met, then single tokens at random
  (partial prediction: the targets are the last 1/K of the order, K = 6).
  Spans count tokens (sub-word pieces), as the original code effectively does.
- order (``block_ranks``): the block's positions cut into chunks of
  ``perm_size`` (the whole block by default); chunks in order, positions within
  a chunk in one random order shared by all chunks (the original's
  ``_local_perm``).
- masks (``permutation_mask``): the non-targets come first in the order (rank
  -1): they see each other and no target; a target sees the non-targets and
  the targets earlier in the order. ``perm_mask[i, j]`` is True where i may
  NOT attend to j, as XLNet's and Hugging Face's; the query stream uses it as
  it is (no target sees itself), the content stream also sees its own position.

Padding (the stream's end) is never a target and is hidden from every
position but padding. Each item is deterministic per (seed, epoch, index).
"""
from typing import Optional, Tuple

import numpy as np
import torch

from .segment_stream_dataset import SegmentStreamDataset


def sample_targets(length: int, budget: int, rng: np.random.Generator, word_start: Optional[np.ndarray] = None,
                   allowed: Optional[np.ndarray] = None, max_gram: int = 5, alpha: int = 6,
                   beta: int = 1) -> np.ndarray:
    """(length,) bool: ``budget`` targets (fewer only when fewer positions are ``allowed``), in spans as
    described above. ``word_start`` (length,) bool marks where a span may start (default: anywhere)."""
    allowed = np.ones(length, dtype=bool) if allowed is None else allowed
    word_start = np.ones(length, dtype=bool) if word_start is None else word_start
    budget = min(budget, int(allowed.sum()))
    targets = np.zeros(length, dtype=bool)
    grams = np.arange(1, max_gram + 1)
    probabilities = 1.0 / grams
    probabilities /= probabilities.sum()
    position = count = 0
    while position < length and count < budget:
        n = min(int(rng.choice(grams, p=probabilities)), budget - count)
        context = n * alpha // beta
        left = int(rng.integers(context)) if context > 0 else 0
        start = position + left
        while start < length and not word_start[start]:
            start += 1
        stop = start + n
        if stop > length:
            break
        span = np.zeros(length, dtype=bool)
        span[start:stop] = True
        span &= allowed & ~targets
        targets |= span
        count += int(span.sum())
        position = stop + context - left
    if count < budget:
        free = np.flatnonzero(allowed & ~targets)
        targets[rng.choice(free, budget - count, replace=False)] = True
    return targets


def block_ranks(length: int, perm_size: int, rng: np.random.Generator) -> np.ndarray:
    """(length,) each position's rank in the factorization order: chunk c of ``perm_size`` positions takes
    ranks c * perm_size + pi(p), pi one random permutation shared by the chunks."""
    if perm_size <= 0 or length % perm_size:
        raise ValueError(f"the permutation size {perm_size} must divide the block length {length}")
    positions = np.arange(length)
    return positions - positions % perm_size + rng.permutation(perm_size)[positions % perm_size]


def permutation_mask(targets: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """(T, T) bool, True where i may not attend to j: j is a target not earlier than i in the order
    (non-targets count as rank -1, before every target)."""
    order = np.where(targets, ranks, -1)
    return targets[None, :] & (order[None, :] >= order[:, None])


def permutation_sample(length: int, reuse_len: int, num_predict: int, rng: np.random.Generator,
                       perm_size: Optional[int] = None, word_start: Optional[np.ndarray] = None,
                       padding: Optional[np.ndarray] = None, max_gram: int = 5, alpha: int = 6,
                       beta: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """perm_mask (T, T) bool and the target positions (at most ``num_predict``, ascending) of one sample
    of ``length`` positions whose first ``reuse_len`` are the reuse part (0: one block). The blocks'
    budgets split ``num_predict`` in proportion to their lengths, the first rounded up."""
    padding = np.zeros(length, dtype=bool) if padding is None else padding
    blocks = [(0, reuse_len), (reuse_len, length)] if 0 < reuse_len < length else [(0, length)]
    first_budget = -(-num_predict * (blocks[0][1] - blocks[0][0]) // length)
    budgets = [first_budget, num_predict - first_budget]
    perm_mask = np.zeros((length, length), dtype=bool)
    targets = np.zeros(length, dtype=bool)
    for (start, stop), budget in zip(blocks, budgets):
        block = slice(start, stop)
        block_targets = sample_targets(stop - start, budget, rng, None if word_start is None else word_start[block],
                                       ~padding[block], max_gram, alpha, beta)
        ranks = block_ranks(stop - start, perm_size or stop - start, rng)
        perm_mask[block, block] = permutation_mask(block_targets, ranks)
        targets[block] = block_targets
    if len(blocks) == 2:
        perm_mask[:reuse_len, reuse_len:] = True  # the reuse part cannot see the rest
    perm_mask |= padding[None, :] & ~padding[:, None]
    return perm_mask, np.flatnonzero(targets)


class PermutationLMDataset(SegmentStreamDataset):
    """A split's stream in rows (as ``SegmentStreamDataset``), read as XLNet's samples: item k holds, for
    each row, the ``seq_len`` positions from k * ``reuse_len`` on, so its reuse part follows the previous
    item's. A whole batch per item, in order (the model's memory continues)."""

    def __init__(self, corpus, eos: int, pad: int, batch_size: int, seq_len: int, reuse_len: int,
                 num_predict: int, seed: int, perm_size: Optional[int] = None,
                 word_starts: Optional[np.ndarray] = None, vary_by_epoch: bool = True, num_shards: int = 1,
                 shard_id: int = 0, max_gram: int = 5, alpha: int = 6, beta: int = 1):
        super().__init__(corpus, eos, pad, batch_size, reuse_len, num_shards, shard_id)
        if not 0 < reuse_len <= seq_len:
            raise ValueError(f"reuse_len {reuse_len} must be in 1..seq_len ({seq_len})")
        if self.row_len < seq_len:
            raise ValueError(f"the split's rows are {self.row_len} tokens long, shorter than one sample of "
                             f"{seq_len}: use fewer rows (--batch-size, --batch-size-valid) or shorter samples "
                             f"(--tokens-per-sample)")
        self.seq_len, self.reuse_len, self.num_predict = seq_len, reuse_len, num_predict
        self.perm_size, self.word_starts = perm_size, word_starts
        self.seed, self.vary_by_epoch, self.epoch, self.shard_id = seed, vary_by_epoch, 1, shard_id
        self.span_options = (max_gram, alpha, beta)
        self.num_batches = (self.row_len - seq_len) // reuse_len + 1
        self.sizes = np.full(self.num_batches, batch_size * seq_len, dtype=np.int64)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __getitem__(self, index: int):
        # each data-parallel shard draws its own targets and orders
        rng = np.random.default_rng([self.seed, self.epoch if self.vary_by_epoch else 1, index, self.shard_id])
        rows, length = self.batch_size, self.seq_len
        source = torch.full((rows, length), self.pad, dtype=torch.long)
        starts = {"sentence_starts": torch.zeros(rows, length, dtype=torch.bool),
                  "paragraph_starts": torch.zeros(rows, length, dtype=torch.bool)}
        segment_ids = torch.zeros(rows, length, dtype=torch.long)
        perm_masks = torch.zeros(rows, length, length, dtype=torch.bool)
        target_mapping = torch.zeros(rows, self.num_predict, length)
        target = torch.full((rows, self.num_predict), self.pad, dtype=torch.long)
        for row, row_start in enumerate(self.row_starts):
            start = int(row_start) + index * self.reuse_len
            tokens, sentences, paragraphs = self._stream(start, start + length)
            n = len(tokens)
            source[row, :n] = torch.from_numpy(tokens)
            starts["sentence_starts"][row, :n] = torch.from_numpy(sentences)
            starts["paragraph_starts"][row, :n] = torch.from_numpy(paragraphs)
            segment_ids[row] = torch.from_numpy(second_segment(sentences, self.reuse_len, length, rng))
            word_start = None if self.word_starts is None else self.word_starts[source[row].numpy()]
            perm_mask, positions = permutation_sample(
                length, self.reuse_len, self.num_predict, rng, self.perm_size, word_start,
                (source[row] == self.pad).numpy(), *self.span_options)
            perm_masks[row] = torch.from_numpy(perm_mask)
            target_mapping[row, torch.arange(len(positions)), torch.from_numpy(positions)] = 1
            target[row, :len(positions)] = source[row, torch.from_numpy(positions)]
        return {"id": index, "source": source, "segment_ids": segment_ids, "perm_mask": perm_masks,
                "target_mapping": target_mapping, "target": target, **starts}

    def collater(self, samples):
        if len(samples) == 0:
            return {}
        assert len(samples) == 1, "PermutationLMDataset batches are single items"
        item = samples[0]
        return {
            "id": torch.arange(self.batch_size) + item["id"] * self.batch_size,
            "nsentences": self.batch_size,
            "ntokens": int(item["target"].ne(self.pad).sum()),
            "net_input": {
                "src_tokens": item["source"],
                "perm_mask": item["perm_mask"],
                "target_mapping": item["target_mapping"],
                "segment_ids": item["segment_ids"],
                "sentence_starts": item["sentence_starts"],
                "paragraph_starts": item["paragraph_starts"],
                "reuse_len": self.reuse_len,
            },
            "target": item["target"],
        }


def second_segment(sentence_starts: np.ndarray, reuse_len: int, length: int, rng: np.random.Generator):
    """(length,) segment ids: 0 up to a sentence start drawn at random after the reuse part, 1 from there
    on (ours: XLNet's A / B pair, with B the text that follows); all 0 when no sentence starts there."""
    segment = np.zeros(length, dtype=np.int64)
    candidates = np.flatnonzero(sentence_starts[reuse_len + 1:]) + reuse_len + 1
    if len(candidates):
        segment[int(rng.choice(candidates)):] = 1
    return segment
