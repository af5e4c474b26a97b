"""SegaBERT from raw text: the pre-training index layout, features, masked-word predictions, heads."""

import numpy as np
import pytest
import torch

TEXT = "The lobster lives on rocky ground . The larva hides under a ledge .\nThe species feeds at night ."


@pytest.fixture(scope="module")
def hub(segabert_checkpoint, segabert_corpus):
    from segatron_fairseq.models.segabert import SegaBERTModel

    return SegaBERTModel.from_pretrained(str(segabert_checkpoint.parent), segabert_checkpoint.name,
                                         str(segabert_corpus))


def test_single_text_gets_its_own_paragraphs_and_sentences(hub):
    encoded = hub.encode(TEXT)
    words = [hub.dictionary[int(i)] for i in encoded["src_tokens"][0]]
    assert words[0] == "<s>" and words[-1] == "</s>" and "</s>" not in words[1:-1]
    assert words[1:-1] == TEXT.split()
    paragraph, sentence, token = (encoded[k][0].tolist() for k in ("paragraph_index", "sentence_index",
                                                                   "token_index"))
    # [CLS] and [SEP] take their neighbours' indexes
    assert paragraph == [0] + [0] * 14 + [1] * 6 + [1]
    assert sentence == [0] + [0] * 7 + [1] * 7 + [0] * 6 + [0]
    assert token == [0] + list(range(7)) + list(range(7)) + list(range(6)) + [5]


def test_pair_takes_the_fine_tuning_layout(hub):
    encoded = hub.encode("The lobster lives .", "The larva hides .")
    assert encoded["paragraph_index"][0].tolist() == [0] * 6 + [1] * 5
    assert encoded["sentence_index"][0].tolist() == [0] * 11
    assert encoded["token_index"][0].tolist() == [0, 0, 1, 2, 3, 3, 0, 1, 2, 3, 3]


def test_features_equal_the_model_on_the_same_input(hub):
    encoded = hub.encode(TEXT)
    features = hub.extract_features(encoded)
    layers = hub.extract_features(encoded, return_all_hiddens=True)
    assert features.shape == (1, encoded["src_tokens"].size(1), 64)
    assert len(layers) == 3 and torch.equal(layers[-1], features)
    with torch.no_grad():
        direct, _ = hub.model(encoded["src_tokens"], features_only=True, paragraph_index=encoded["paragraph_index"],
                              sentence_index=encoded["sentence_index"], token_index=encoded["token_index"])
    torch.testing.assert_close(features, direct, rtol=0, atol=0)
    # the indexes matter: moving the second paragraph to paragraph 0 changes its states
    moved = dict(encoded, paragraph_index=torch.zeros_like(encoded["paragraph_index"]))
    assert not torch.allclose(hub.extract_features(moved)[0, -3], features[0, -3])


def test_fill_mask_ranks_the_model_distribution(hub):
    filled = hub.fill_mask("The lobster lives on rocky <mask> .", topk=3)
    assert len(filled) == 3
    probabilities = [p for _, p, _ in filled]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1 + 1e-6
    text, _, word = filled[0]
    assert text == f"The lobster lives on rocky {word} ."
    with pytest.raises(ValueError, match="exactly one <mask>"):
        hub.fill_mask("no mask here")


def test_predict_reads_a_classification_head(hub):
    hub.model.register_classification_head("demo_head", num_classes=3)
    log_probs = hub.predict("demo_head", hub.encode("The lobster lives .", "The larva hides ."))
    assert log_probs.shape == (1, 3)
    np.testing.assert_allclose(log_probs.exp().sum().item(), 1.0, rtol=1e-6)
    with pytest.raises(KeyError, match="no classification head 'missing'"):
        hub.predict("missing", hub.encode("The lobster lives ."))


def test_sentencepiece_keeps_the_mask_symbol_whole(tmp_path):
    from segatron_preprocess import subwords

    sentences = [f"the lobster number {i} lives on rocky ground near the reef" for i in range(200)]
    subwords.train_sentencepiece(iter(sentences), 40, str(tmp_path / "sp.model"), 1000)
    plain = subwords.SentencePiece(str(tmp_path / "sp.model"))
    keeping = subwords.SentencePiece(str(tmp_path / "sp.model"), keep=("<mask>",))
    assert "<mask>" not in plain.encode("the lobster <mask> ground")
    pieces = keeping.encode("the lobster <mask> ground")
    assert pieces.count("<mask>") == 1
    assert [p for p in pieces if p != "<mask>"] == plain.encode("the lobster") + plain.encode(" ground")


def test_fill_mask_writes_sentencepiece_predictions_without_their_word_marker(tmp_path):
    """On a sentencepiece corpus the filled text holds "in", not the piece "\u2581in"; a piece inside a word is
    written as it is."""
    from conftest import binarized_training_text
    from tiny_models import build, tiny_args, tiny_task

    from segatron_fairseq.hub.segabert import SegaBERTHubInterface
    from segatron_fairseq.tasks.masking import load_dictionary_with_mask

    data = binarized_training_text(tmp_path, 20, 61, "--bpe", "sentencepiece", "--bpe-vocab-size", 60)
    dictionary = load_dictionary_with_mask(str(data))
    args = tiny_args("segabert_tiny", width=())
    task = tiny_task(args, dictionary)
    hub = SegaBERTHubInterface(args, task, build(args, task), str(data))
    masked = "The lobster lives <mask> the reef ."
    filled = hub.fill_mask(masked, topk=len(dictionary))
    symbols = [symbol for _, _, symbol in filled]
    assert any(s.startswith("\u2581") and len(s) > 1 for s in symbols) and any(s[0].isalpha() for s in symbols)
    for text, _, symbol in filled:
        assert text == masked.replace("<mask>", symbol.lstrip("\u2581"))
