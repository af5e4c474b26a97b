"""ALBERT's sentence-order prediction: segabert_mlm --sentence-order-prediction examples, their indexes in the
presented order, the masked_lm_sop criterion, the torch_lamb optimizer."""
import math

import numpy as np
import pytest
import torch
from conftest import binarized_wikitext
from fairseq.data import Dictionary

from segatron_fairseq.data import SegmentIndexedDataset, SentenceOrderDataset
from segatron_fairseq.data.sentence_order import sentence_order_texts, split_point
from segatron_fairseq.segments import layout_of_texts

LIMITS = {"paragraph": 50, "sentence": 100, "token": 256}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return binarized_wikitext(tmp_path_factory.mktemp("sop"), 30, 3, seed=31) / "bin"


def _dataset(corpus, max_tokens=48, num_examples=2000):
    d = Dictionary.load(str(corpus / "dict.txt"))
    split = SegmentIndexedDataset(str(corpus / "train"))
    return d, split, SentenceOrderDataset(split, d.bos(), d.eos(), max_tokens, LIMITS, seed=1,
                                          num_examples=num_examples)


def _texts(item, bos, eos):
    """The two presented texts' token ids of an example."""
    tokens = item["tokens"].tolist()
    assert tokens[0] == bos and tokens[-1] == eos and tokens.count(eos) == 2
    first = tokens.index(eos)
    return tokens[1:first], tokens[first + 1:-1]


def test_labels_balanced_swaps_real_and_layout(corpus):
    """Half the examples swapped (2000 draws: within 4 standard deviations); every example is [CLS] X [SEP] Y [SEP]
    with token types 0 / 1 (the [SEP] after X of type 0); X + Y (in order) or Y + X (swapped) is a run of the
    document's tokens starting at a sentence start, split at a sentence start unless the run is one sentence."""
    d, split, examples = _dataset(corpus)
    tokens = split.token_array()
    token_index = split.index_array("token")
    labels = np.array([examples[i]["sentence_order"] for i in range(len(examples))])
    assert abs(labels.mean() - 0.5) < 4 * math.sqrt(0.25 / len(labels))
    for i in range(200):
        item = examples[i]
        x, y = _texts(item, d.bos(), d.eos())
        assert len(item["tokens"]) == examples.sizes[i] <= 48
        assert item["token_type"].tolist() == [0] * (len(x) + 2) + [1] * (len(y) + 1)
        a, b = (y, x) if item["sentence_order"] else (x, y)
        start = examples.table.starts[examples.first_sentence[i]]
        run = [t for t in tokens[start:start + 4 * 48].tolist() if t != d.eos()][:len(a) + len(b)]
        assert a + b == run
        if a and b:
            run_token_index = [int(v) for t, v in zip(tokens[start:start + 4 * 48], token_index[start:start + 4 * 48])
                               if t != d.eos()][:len(a) + len(b)]
            assert run_token_index[0] == 0
            one_sentence = 0 not in run_token_index[1:]
            assert one_sentence or run_token_index[len(a)] == 0


def test_indexes_follow_the_presented_order(corpus):
    """In both labels the paragraph index never decreases, the second text starts a new paragraph at sentence 0 and
    token 0, and the first text starts at the run's own first paragraph / sentence."""
    d, _, examples = _dataset(corpus)
    seen = set()
    for i in range(300):
        item = examples[i]
        x, _ = _texts(item, d.bos(), d.eos())
        paragraph, sentence, token = (item[name].numpy() for name in ("paragraph", "sentence", "token"))
        assert (np.diff(paragraph) >= 0).all()
        second = len(x) + 2
        if second < len(paragraph) - 1 and len(x):
            assert paragraph[second] == paragraph[second - 1] + 1
            assert sentence[second] == 0 and token[second] == 0
        assert token[1] == 0
        seen.add(item["sentence_order"])
    assert seen == {0, 1}


def test_index_streams_cannot_tell_a_pair_from_its_swap():
    """A and B of the same structure (one paragraph break, the same sentence lengths), taken from a document in
    which B follows A: the in-order and the swapped examples have identical index tensors (only the tokens
    differ); and for any run, the swapped example's indexes are those of an in-order run whose texts have the
    structure of B then A."""
    paragraph = np.array([3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6])
    sentence = np.array([2, 2, 2, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0])
    token = np.array([0, 1, 2, 0, 1, 2, 0, 1, 0, 1, 2, 3, 0, 1])
    ids = np.arange(10, 24)
    indexes = {"paragraph": paragraph, "sentence": sentence, "token": token}
    # A = the first 8 tokens (sentences of 3 | 3, 2), B = the last 6 (sentences 4 | 2): different structure
    in_order = layout_of_texts(sentence_order_texts(ids, indexes, 8, swap=False), 0, 2, LIMITS)
    swapped = layout_of_texts(sentence_order_texts(ids, indexes, 8, swap=True), 0, 2, LIMITS)
    assert in_order.indexes["paragraph"].tolist() == [3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6]
    assert swapped.indexes["paragraph"].tolist() == [3, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 6, 6]
    assert swapped.indexes["sentence"].tolist() == [2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    # B's structure laid out first as an in-order run of its own gives the swapped example's indexes
    b_first = {k: np.concatenate([v[8:], v[:8]]) for k, v in indexes.items()}
    b_first["paragraph"] = np.array([3, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 6, 6, 6])
    b_first["sentence"] = np.array([2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    as_in_order = layout_of_texts(sentence_order_texts(ids, b_first, 6, swap=False), 0, 2, LIMITS)
    for name in ("paragraph", "sentence", "token"):
        assert as_in_order.indexes[name].tolist() == swapped.indexes[name].tolist(), name
    # A and B of one structure: identical index tensors for the pair and its swap
    same = {"paragraph": np.array([7, 7, 8, 8, 8, 9, 9, 10, 10, 10]), "sentence": np.array([1, 1, 0, 0, 0] * 2),
            "token": np.array([0, 1, 0, 1, 2] * 2)}
    pair = layout_of_texts(sentence_order_texts(ids[:10], same, 5, swap=False), 0, 2, LIMITS)
    swap = layout_of_texts(sentence_order_texts(ids[:10], same, 5, swap=True), 0, 2, LIMITS)
    assert pair.tokens.tolist() != swap.tokens.tolist()
    for name in ("paragraph", "sentence", "token"):
        assert pair.indexes[name].tolist() == swap.indexes[name].tolist(), name
    assert pair.token_type.tolist() == swap.token_type.tolist()


def test_split_point():
    assert split_point(np.array([0, 1, 2, 0, 1, 0]), 0.0) == 3
    assert split_point(np.array([0, 1, 2, 0, 1, 0]), 0.99) == 5
    assert split_point(np.array([0, 1, 2, 3]), 0.0) == 1 and split_point(np.array([0, 1, 2, 3]), 0.99) == 3
    assert split_point(np.array([0]), 0.5) == 1


def test_examples_depend_on_seed_epoch_and_index(corpus):
    _, _, a = _dataset(corpus, num_examples=50)
    _, _, b = _dataset(corpus, num_examples=50)
    assert all(torch.equal(a[i]["tokens"], b[i]["tokens"]) and a[i]["sentence_order"] == b[i]["sentence_order"]
               for i in range(50))
    b.set_epoch(2)
    assert any(not torch.equal(a[i]["tokens"], b[i]["tokens"]) for i in range(50))


def test_masked_lm_sop_is_mlm_plus_sop_by_hand(corpus):
    """The criterion's loss / sample size = mean cross-entropy of the masked tokens + mean SOP cross-entropy of the
    [CLS] head, each computed here from the model's own outputs; its logs hold them apart (base 2)."""
    from tiny_models import build, tiny_args

    from segatron_fairseq.criterions.masked_lm_sop import MaskedLMSentenceOrderLoss
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(corpus), tokens_per_sample=48, seed=1,
                                                        sentence_order_prediction=True))
    args = tiny_args("segabert_tiny", "--share-encoder-layers", "all", "--factorized-embed-dim", 16,
                     "--num-token-types", 2, width=())
    model = build(args, task)
    assert "sentence_order" in model.classification_heads
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in range(8)])
    assert sample["net_input"]["token_type"].shape == sample["net_input"]["src_tokens"].shape
    criterion = MaskedLMSentenceOrderLoss(task)
    loss, sample_size, log = criterion(model, sample)
    with torch.no_grad():
        logits = model(**sample["net_input"])[0]
        masked = sample["target"].ne(task.dictionary.pad())
        mlm = torch.nn.functional.cross_entropy(logits[masked], sample["target"][masked])
        sop_logits = model(**sample["net_input"], features_only=True, classification_head_name="sentence_order")[0]
        sop = torch.nn.functional.cross_entropy(sop_logits, sample["sentence_order"])
    assert sample_size == int(masked.sum())
    torch.testing.assert_close(loss / sample_size, mlm + sop)
    torch.testing.assert_close(log["mlm_loss"] / sample_size, mlm)
    torch.testing.assert_close(log["sop_loss"] / 8, sop)
    assert int(log["sop_correct"]) == int((sop_logits.argmax(-1) == sample["sentence_order"]).sum())


def test_torch_lamb_against_a_by_hand_update():
    """Two steps of torch_lamb on a matrix and a bias, against LAMB written out: Adam moments with bias
    correction, the weight decay added to the update, the trust ratio ||p|| / ||u|| per tensor (the bias, a 1-d
    tensor: neither, as ALBERT's recipe)."""
    from segatron_fairseq.optim.torch_lamb import Lamb

    torch.manual_seed(0)
    weight, bias = torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3))
    lr, (b1, b2), eps, wd = 0.01, (0.9, 0.999), 1e-6, 0.1
    optimizer = Lamb([weight, bias], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    expected = {"w": weight.detach().clone(), "b": bias.detach().clone()}
    moments = {k: (torch.zeros_like(v), torch.zeros_like(v)) for k, v in expected.items()}
    for step in (1, 2):
        grads = {"w": torch.randn(4, 3), "b": torch.randn(3)}
        weight.grad, bias.grad = grads["w"].clone(), grads["b"].clone()
        optimizer.step()
        for k in ("w", "b"):
            m, v = moments[k]
            m = b1 * m + (1 - b1) * grads[k]
            v = b2 * v + (1 - b2) * grads[k] ** 2
            moments[k] = (m, v)
            u = (m / (1 - b1 ** step)) / ((v / (1 - b2 ** step)).sqrt() + eps)
            if k == "w":
                u = u + wd * expected[k]
                ratio = expected[k].norm() / u.norm()
            else:
                ratio = 1.0
            expected[k] = expected[k] - lr * ratio * u
        torch.testing.assert_close(weight.detach(), expected["w"])
        torch.testing.assert_close(bias.detach(), expected["b"])


def test_sop_and_its_criterion_go_together(corpus):
    from fairseq.dataclass import FairseqDataclass

    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    def criterion(name, sop):
        task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(corpus), seed=1, sentence_order_prediction=sop))
        cfg = FairseqDataclass()
        cfg._name = name
        return task.build_criterion(cfg)

    with pytest.raises(ValueError, match="--sentence-order-prediction needs --criterion masked_lm_sop, not masked_lm"):
        criterion("masked_lm", True)
    with pytest.raises(ValueError, match="--criterion masked_lm_sop needs --sentence-order-prediction"):
        criterion("masked_lm_sop", False)



def test_too_short_examples_are_refused_by_the_option(corpus):
    from segatron_fairseq.data import DocumentExampleDataset

    with pytest.raises(ValueError, match="--tokens-per-sample 3: sentence-order examples need room"):
        _dataset(corpus, max_tokens=3)
    d = Dictionary.load(str(corpus / "dict.txt"))
    with pytest.raises(ValueError, match="--tokens-per-sample 2: examples need room for"):
        DocumentExampleDataset(SegmentIndexedDataset(str(corpus / "train")), d.bos(), d.eos(), 2, LIMITS, 1)
