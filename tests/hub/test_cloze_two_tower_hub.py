"""The cloze two-tower hub: each token's cloze log-probability and a text's pseudo-perplexity from raw text."""
import math

import pytest
import torch
from corpus import make_documents, write_wikitext


@pytest.fixture(scope="module")
def hub(cloze_trained):
    from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerModel

    return ClozeTwoTowerModel.from_pretrained(str(cloze_trained / "ckpt"), "checkpoint_last.pt",
                                              str(cloze_trained / "bin"))


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("cloze_hub") / "text.txt"
    write_wikitext(path, make_documents(1, seed=99))
    words = path.read_text().split()
    return " ".join(words[:40]) + "\n"


def test_encode_is_a_pretraining_block(hub, text):
    encoded = hub.encode(text, "lines")
    symbols = [hub.dictionary[int(i)] for i in encoded["src_tokens"][0]]
    assert symbols[0] == symbols[-1] == "<s>" and "</s>" not in symbols
    assert symbols[1:-1] == [w if w in hub.dictionary.indices else "<unk>" for w in text.split()]
    assert set(encoded) == {"src_tokens", "paragraph_index", "sentence_index", "token_index"}


def test_token_log_probs_are_the_models_cloze_distribution(hub, text):
    scored = hub.token_log_probs(text, "lines")
    encoded = hub.encode(text, "lines")
    assert [token for token, _ in scored] == [hub.dictionary[int(i)] for i in encoded["src_tokens"][0, 1:-1]]
    with torch.no_grad():
        features = hub.model(**encoded)["cloze"]
        logits = features @ hub.model.network.embed_tokens.weight.t()
    by_hand = logits.log_softmax(-1)[0, 1:-1].gather(-1, encoded["src_tokens"][0, 1:-1, None]).squeeze(-1)
    torch.testing.assert_close(torch.tensor([s for _, s in scored]), by_hand)
    assert hub.pseudo_perplexity(text, "lines") == pytest.approx(math.exp(-by_hand.mean().item()), rel=1e-5)


def test_a_token_does_not_score_itself(hub):
    """Replacing a word changes the others' scores, not the score of the word that stands at its place."""
    first = hub.token_log_probs("the crab lives near the reef .", "lines")
    second = hub.token_log_probs("the crab hides near the reef .", "lines")
    distributions = []
    for text in ("the crab lives near the reef .", "the crab hides near the reef ."):
        encoded = hub.encode(text, "lines")
        with torch.no_grad():
            distributions.append(hub.model(**encoded)["cloze"][0, 3])
    torch.testing.assert_close(distributions[0], distributions[1])
    assert first[0][1] != second[0][1]


def test_scoring_uses_the_pretraining_mask_of_a_fine_tuning_model(hub, text):
    before = hub.token_log_probs(text, "lines")
    hub.model.set_combination_mask("none")
    try:
        assert hub.token_log_probs(text, "lines") == before
        assert hub.model.network.combination_mask == "none"
    finally:
        hub.model.set_combination_mask("full")


def test_trained_model_beats_a_uniform_guess(hub, text):
    assert hub.pseudo_perplexity(text, "lines") < len(hub.dictionary) / 4


def test_refusals(hub, segabert_checkpoint, segabert_corpus, cloze_trained):
    from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerModel

    with pytest.raises(ValueError, match="the text has 600 tokens; the model reads at most 510"):
        hub.encode(" ".join(["the"] * 600), "lines")
    with pytest.raises(ValueError, match="this is a segabert checkpoint; cloze scores need a cloze_two_tower one"):
        ClozeTwoTowerModel.from_pretrained(str(segabert_checkpoint.parent), segabert_checkpoint.name,
                                           str(segabert_corpus))
    with pytest.raises(ValueError, match="is not the corpus this model was trained on"):
        ClozeTwoTowerModel.from_pretrained(str(cloze_trained / "ckpt"), "checkpoint_last.pt", str(segabert_corpus))
