"""SpanBERT's span masking and our sentence spans (``data/span_masking.py``), and the span boundary head
(``models/span_boundary_head.py``) against a by-hand computation."""
import math

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary

from segatron_fairseq.data import DocumentExampleDataset, SegmentIndexedDataset
from segatron_fairseq.data.span_masking import (
    MAX_SPAN_TARGETS,
    SpanMaskDataset,
    draw_spans,
    span_length_probabilities,
    words_of,
)
from segatron_fairseq.models.span_boundary_head import SpanBoundaryHead

CHI2_9_DOF_AT_1E4 = 33.72  # the chi-square distribution's 1 - 1e-4 quantile at 9 degrees of freedom


def _dictionary(words=40, pieces=10):
    """``words`` whole-word symbols w0.., then ``pieces`` continuation pieces ##p0.., then <mask>."""
    d = Dictionary()
    for i in range(words):
        d.add_symbol(f"w{i}")
    for i in range(pieces):
        d.add_symbol(f"##p{i}")
    return d, d.add_symbol("<mask>")


def _begins_word(d):
    return torch.tensor([not d[i].startswith("##") for i in range(len(d))], dtype=torch.uint8)


def _items(d, count, length, seed=0, pieces=True):
    """[CLS] tokens [SEP] items: words of 1-3 symbols (a word symbol, then ## pieces)."""
    rng = np.random.default_rng(seed)
    words = [i for i in range(len(d)) if d[i].startswith("w")]
    continuations = [i for i in range(len(d)) if d[i].startswith("##")]
    items = []
    for _ in range(count):
        word = np.repeat(np.arange(length), rng.integers(1, 4, size=length) if pieces else 1)[:length - 2]
        first = np.concatenate([[True], word[1:] != word[:-1]])
        body = np.where(first, rng.choice(words, size=len(word)),
                        rng.choice(continuations or words, size=len(word)))
        items.append(torch.tensor([d.bos(), *body.tolist(), d.eos()]))
    return items


def _runs(masked):
    edges = np.diff(np.concatenate([[0], masked.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def _chi2(counts, probabilities):
    expected = probabilities * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_span_lengths_follow_the_truncated_geometric_distribution():
    """Spans drawn on long items (whole words of 1-3 symbols) against Geo(0.2) truncated to 1..10 and
    renormalised: chi-square below the 1e-4 critical value; the same counts refute p = 0.23, and a clipping
    that piles the tail on 10 instead of renormalising."""
    rng = np.random.default_rng(0)
    probabilities = span_length_probabilities(0.2, 10)
    counts = np.zeros(10)
    d, _ = _dictionary()
    begins = _begins_word(d).numpy().astype(bool)
    for item in _items(d, 50, 4000):
        tokens = item.numpy()
        maskable = (tokens != d.bos()) & (tokens != d.eos())
        words = words_of(maskable, begins[tokens])
        spans = draw_spans(rng, words, len(tokens), math.ceil(0.15 * maskable.sum()), probabilities)
        for span in spans:
            if not span.truncated:  # the last span may be cut to the budget
                first, last = np.searchsorted(words[:, 0], span.start), np.searchsorted(words[:, 1], span.stop)
                assert words[first, 0] == span.start and words[last, 1] == span.stop
                counts[last - first] += 1
    assert counts.sum() > 3500
    assert _chi2(counts, probabilities) < CHI2_9_DOF_AT_1E4
    assert _chi2(counts, span_length_probabilities(0.23, 10)) > CHI2_9_DOF_AT_1E4
    piled = 0.2 * 0.8 ** np.arange(10)
    piled[-1] = 0.8 ** 9  # min(Geo(0.2), 10)
    assert _chi2(counts, piled) > CHI2_9_DOF_AT_1E4
    assert np.isclose(probabilities.sum(), 1) and probabilities[0] / probabilities[1] == pytest.approx(1 / 0.8)


def test_spans_are_whole_words_within_the_budget_and_never_touch():
    d, mask = _dictionary()
    begins = _begins_word(d)
    dataset = SpanMaskDataset(_items(d, 40, 120), d, mask, seed=3, begins_word=begins)
    for i in range(len(dataset)):
        tokens, item = dataset.dataset[i], dataset[i]
        masked = item["target"].ne(d.pad()).numpy()
        maskable = int(((tokens != d.bos()) & (tokens != d.eos())).sum())
        budget = math.ceil(0.15 * maskable)
        assert budget <= masked.sum() < budget + 3  # whole words of at most 3 symbols reach the budget
        assert not masked[0] and not masked[-1]  # never [CLS] / [SEP]
        for start, stop in _runs(masked):
            assert begins[tokens[start]] and begins[tokens[stop]]  # no span starts or ends inside a word
            assert (item["span_left"][start:stop] == start - 1).all()
            assert (item["span_right"][start:stop] == stop).all()
            assert item["span_offset"][start:stop].tolist() == [k if k < MAX_SPAN_TARGETS else -1
                                                                for k in range(stop - start)]
        assert (item["span_offset"][~torch.from_numpy(masked)] == -1).all()
        assert torch.equal(item["target"][torch.from_numpy(masked)], tokens[torch.from_numpy(masked)])


def test_every_token_is_a_word_without_sub_words():
    d, mask = _dictionary(pieces=0)
    dataset = SpanMaskDataset(_items(d, 20, 101, pieces=False), d, mask, seed=1)
    for i in range(len(dataset)):
        assert int(dataset[i]["target"].ne(d.pad()).sum()) == math.ceil(0.15 * 99)  # the budget, exactly


def test_80_10_10_is_decided_per_span():
    d, mask = _dictionary(words=400, pieces=0)
    dataset = SpanMaskDataset(_items(d, 300, 200, pieces=False), d, mask, seed=5)
    kinds = {"mask": 0, "keep": 0, "random": 0}
    for i in range(len(dataset)):
        item = dataset[i]
        source, target = item["source"], item["target"]
        for start, stop in _runs(target.ne(d.pad()).numpy()):
            piece = source[start:stop]
            if (piece == mask).all():
                kinds["mask"] += 1
            elif torch.equal(piece, target[start:stop]):
                kinds["keep"] += 1
            else:
                assert not (piece == mask).any()  # a span is masked whole or not at all
                assert (piece >= d.nspecial).all()
                kinds["random"] += 1
    total = sum(kinds.values())
    assert total > 2000
    assert abs(kinds["mask"] / total - 0.8) < 0.03
    assert abs(kinds["keep"] / total - 0.1) < 0.025 and abs(kinds["random"] / total - 0.1) < 0.025


def test_masking_depends_on_seed_epoch_and_index_only():
    d, mask = _dictionary()
    items = _items(d, 6, 80)

    def masked(seed, epoch, index):
        dataset = SpanMaskDataset(items, d, mask, seed=seed, begins_word=_begins_word(d))
        dataset.set_epoch(epoch)
        return torch.cat([dataset[index]["source"], dataset[index]["target"]])

    assert torch.equal(masked(1, 1, 2), masked(1, 1, 2))
    assert not torch.equal(masked(1, 1, 2), masked(1, 2, 2))
    assert not torch.equal(masked(1, 1, 2), masked(2, 1, 2))


@pytest.fixture(scope="module")
def examples(segabert_corpus):
    d = Dictionary.load(str(segabert_corpus / "dict.txt"))
    mask = d.add_symbol("<mask>")
    corpus = SegmentIndexedDataset(str(segabert_corpus / "train"))
    return d, mask, DocumentExampleDataset(corpus, d.bos(), d.eos(), 256, {"paragraph": 50, "sentence": 100,
                                                                            "token": 256}, seed=1)


def test_sentence_spans_cover_whole_sentences(examples):
    """Masked runs are whole sentences, except one piece per example that begins a sentence (what is left of
    the budget when the sentences that fit are masked)."""
    d, mask, dataset = examples
    masked_dataset = SpanMaskDataset(dataset, d, mask, seed=2, mode="sentence")
    whole = 0
    for i in range(len(dataset)):
        item, example = masked_dataset[i], dataset[i]
        starts = example["token"].numpy() == 0
        starts[0] = False
        masked = item["target"].ne(d.pad()).numpy()
        budget = math.ceil(0.15 * (len(masked) - 2))
        assert masked.sum() >= budget
        partial = 0
        for start, stop in _runs(masked):
            assert starts[start]  # every run begins a sentence
            inner = np.flatnonzero(starts[start:stop])
            sentence_ends = stop == len(masked) - 1 or starts[stop]
            partial += not sentence_ends
            whole += len(inner) - (not sentence_ends)
        assert partial <= 1
    assert whole > len(dataset)  # mostly whole sentences


def test_sentence_mode_needs_sentence_indexes():
    d, mask = _dictionary()
    dataset = SpanMaskDataset(_items(d, 2, 30), d, mask, seed=1, mode="sentence")
    with pytest.raises(ValueError, match="--mask-span sentence needs examples with sentence indexes"):
        dataset[0]


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def test_span_boundary_head_by_hand():
    """concat(x_{s-1}, x_{e+1}, p_i) -> Linear, GeLU, LayerNorm -> Linear (d -> E), GeLU, LayerNorm -> the word
    embeddings (V, E) and the head's bias; E = 3 differs from d = 4 (a factorized embedding)."""
    torch.manual_seed(0)
    hidden, embed, vocab = 4, 3, 7
    head = SpanBoundaryHead(hidden, embed, vocab, layer_norm_eps=1e-12).double()
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.normal_(0, 0.5)
    words = torch.randn(vocab, embed, dtype=torch.double)
    left, right = torch.randn(2, hidden, dtype=torch.double), torch.randn(2, hidden, dtype=torch.double)
    offsets = torch.tensor([0, 14])
    ours = head(left, right, offsets, words)

    def gelu(x):
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    for n in range(2):
        x = torch.cat([left[n], right[n], head.offset_embeddings.weight[offsets[n]]])
        assert x.shape == (2 * hidden + 200,)
        h = _layer_norm(gelu(head.hidden.weight @ x + head.hidden.bias), head.hidden_norm.weight,
                        head.hidden_norm.bias, 1e-12)
        y = _layer_norm(gelu(head.output.weight @ h + head.output.bias), head.output_norm.weight,
                        head.output_norm.bias, 1e-12)
        torch.testing.assert_close(ours[n], words @ y + head.bias, rtol=0, atol=1e-12)
    assert head.offset_embeddings.weight.shape == (15, 200) and head.output.weight.shape == (embed, hidden)
