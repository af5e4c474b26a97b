"""The held-out ELECTRA measure (evaluation/replaced_token_detection.py): accuracy and ROC AUC of the discriminator
on replacements that do not depend on the model, and the generator's perplexity."""
import math

import numpy as np
import pytest
import torch


def test_detection_metrics_of_a_perfect_and_a_constant_scorer():
    from segatron_fairseq.evaluation.replaced_token_detection import detection_metrics

    labels = np.array([0, 0, 1, 0, 1, 1, 0])
    assert detection_metrics(labels, np.where(labels == 1, 3.0, -2.0)) == (1.0, 1.0)
    accuracy, auc = detection_metrics(labels, np.full(7, -1.0))
    assert auc == 0.5 and accuracy == pytest.approx(4 / 7)
    assert math.isnan(detection_metrics(np.zeros(3), np.ones(3))[1])


def test_replacements_are_drawn_per_seed_and_example_from_the_unigram():
    from fairseq.data import Dictionary

    from segatron_fairseq.evaluation.replaced_token_detection import replacement_tokens, unigram_distribution

    dictionary = Dictionary()
    for word, count in (("a", 30), ("b", 10)):
        dictionary.add_symbol(word, n=count)
    dictionary.add_symbol("<mask>")
    distribution = unigram_distribution(dictionary)
    assert distribution[dictionary.index("a")] == 0.75 and distribution[dictionary.index("<mask>")] == 0
    assert distribution[:dictionary.nspecial].sum() == 0
    first = replacement_tokens(7, 50, distribution, seed=1)
    assert (first == replacement_tokens(7, 50, distribution, seed=1)).all()
    assert not (first == replacement_tokens(8, 50, distribution, seed=1)).all()
    assert set(first.tolist()) <= {dictionary.index("a"), dictionary.index("b")}


def test_two_checkpoints_are_scored_on_identical_corrupted_inputs(electra_checkpoints, segabert_corpus):
    """A model with index tables and one without: the same masked positions, the same drawn tokens, the same labels
    (1 exactly where a drawn token differs from the original); each gets its accuracy, AUC and generator
    perplexity over the same tokens."""
    from segatron_fairseq.evaluation.replaced_token_detection import corrupted_batches, score_split
    from segatron_fairseq.hub.checkpoints import load_checkpoint

    loaded = [load_checkpoint(str(path), "segabert", str(segabert_corpus)) for path in electra_checkpoints.values()]
    inputs = [list(corrupted_batches(one.task, "valid", seed=3, batch_size=8)) for one in loaded]
    assert len(inputs[0]) == len(inputs[1]) > 1
    for (a, labels_a, sample_a), (b, labels_b, _) in zip(*inputs):
        assert torch.equal(a["src_tokens"], b["src_tokens"]) and torch.equal(labels_a, labels_b)
        masked = sample_a["target"].ne(1)
        assert not labels_a[~masked].any()
        assert torch.equal(labels_a.bool()[masked], a["src_tokens"][masked].ne(sample_a["target"][masked]))
    other_seed = next(iter(corrupted_batches(loaded[0].task, "valid", seed=4, batch_size=8)))
    assert not torch.equal(other_seed[0]["src_tokens"], inputs[0][0][0]["src_tokens"])
    scores = [score_split(one.model, one.task, "valid", seed=3) for one in loaded]
    assert scores[0].tokens == scores[1].tokens and scores[0].replaced == scores[1].replaced > 0
    assert scores[0].masked == scores[1].masked > 0
    for score in scores:
        assert 0 <= score.accuracy <= 1 and 0 <= score.auc <= 1 and 1 < score.generator_ppl < 200
