"""The backward tower's indexes: the module's worked example, and random blocks against a count by hand."""
import random

import torch

from segatron_fairseq.modules.backward_tower_indexes import backward_tower_indexes


def test_the_worked_example():
    forward = {"paragraph": torch.zeros(1, 8, dtype=torch.long),
               "sentence": torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1]]),
               "token": torch.tensor([[0, 0, 1, 2, 0, 1, 2, 2]])}
    backward = backward_tower_indexes(forward, None)
    assert backward["paragraph"].tolist() == [[0] * 8]
    assert backward["sentence"].tolist() == [[1, 1, 1, 0, 0, 0, 0, 0]]
    assert backward["token"].tolist() == [[2, 1, 0, 2, 1, 0, 0, 0]]


def _random_block(rng, shortest_sentence=1):
    """Forward indexes of ``<s>`` + tokens + ``<s>`` (each ``<s>`` with its neighbour's)."""
    length = rng.randint(1, 12)
    paragraph, sentence, token = [], [], []
    p = s = t = 0
    for _ in range(length):
        if t >= shortest_sentence and rng.random() < 0.3:  # a new paragraph
            p, s, t = p + 1, 0, 0
        elif t >= shortest_sentence and rng.random() < 0.3:  # a new sentence
            s, t = s + 1, 0
        paragraph.append(p)
        sentence.append(s)
        token.append(t)
        t += 1
    columns = [[c[0]] + c + [c[-1]] for c in (paragraph, sentence, token)]
    return dict(zip(("paragraph", "sentence", "token"), columns))


def _by_hand(block):
    """At position j: of position j + 1, the paragraph ends after it in the block, the sentence ends after it in its
    paragraph, the tokens after it in its sentence (0 at the last position), counted from boundaries."""
    n = len(block["token"])
    same_paragraph = [block["paragraph"][k] == block["paragraph"][k + 1] for k in range(n - 1)]
    same_sentence = [same_paragraph[k] and block["sentence"][k] == block["sentence"][k + 1] for k in range(n - 1)]
    expected = {"paragraph": [0] * n, "sentence": [0] * n, "token": [0] * n}
    for j in range(n - 1):
        m = j + 1
        later = range(m, n - 1)  # the boundaries between k and k + 1 for k >= m
        expected["paragraph"][j] = sum(not same_paragraph[k] for k in later)
        in_paragraph = [k for k in later if all(same_paragraph[m:k])]
        expected["sentence"][j] = sum(same_paragraph[k] and not same_sentence[k] for k in in_paragraph)
        tokens_after = range(m, n - 2)  # the tokens k + 1 after m (the last <s> is no token)
        expected["token"][j] = sum(all(same_sentence[m:k + 1]) for k in tokens_after)
    return expected


def _check_random_batches(rng, limits=None, shortest_sentence=1):
    """Batches of 3 random right-padded blocks, their paragraph and sentence indexes clipped to ``limits``:
    the counts are those of the unclipped blocks by hand, clipped to ``limits``."""
    limits = limits or {}
    for _ in range(20):
        blocks = [_random_block(rng, shortest_sentence) for _ in range(3)]
        width = max(len(b["token"]) for b in blocks)
        padding = torch.tensor([[k >= len(b["token"]) for k in range(width)] for b in blocks])
        forward = {name: torch.tensor([b[name] + [0] * (width - len(b[name])) for b in blocks])
                   for name in ("paragraph", "sentence", "token")}
        clipped = {name: values.clamp(max=limits.get(name, 10 ** 6)) for name, values in forward.items()}
        backward = backward_tower_indexes(clipped, padding, limits)
        for row, block in enumerate(blocks):
            n = len(block["token"])
            for name, values in _by_hand(block).items():
                expected = [min(v, limits.get(name, 10 ** 6)) for v in values]
                assert backward[name][row, :n].tolist() == expected, (name, block)
                assert not backward[name][row, n:].any()


def test_random_right_padded_blocks_against_a_count_by_hand():
    _check_random_batches(random.Random(0))


def test_clipped_paragraph_and_sentence_indexes_leave_the_counts_right():
    """The boundaries come from the token index, so indexes clipped to small tables change no count (sentences
    of two tokens or more: a one-token sentence whose indexes are all clipped looks like a copy)."""
    _check_random_batches(random.Random(1), {"paragraph": 1, "sentence": 1}, shortest_sentence=2)
