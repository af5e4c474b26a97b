"""Sentence boundaries: the rules on small cases, and precision / recall on a hand-made gold set of real text."""
import os
from pathlib import Path

import nltk
import pytest
from conftest import ROOT
from nltk.tokenize.punkt import load_punkt_params

from segatron_preprocess import readers, sentences, units

GOLD = Path(__file__).resolve().parents[1] / "data" / "sentence_gold" / "wikitext2-valid.sentences.txt"
WIKITEXT2_VALID = ROOT.parent / "shared" / "data" / "wikitext2" / "wiki.valid.tokens"
TRAIN_TEXT = ("The crab lives near the reef . It hides under a ledge . Mr. Smith saw it at St. Mary 's Bay . "
              "Dr. Jones counted 3 @.@ 5 crabs per metre . The U.S. survey agreed . ") * 40


@pytest.fixture(scope="module")
def small_splitter():
    return sentences.load_params(sentences.train([TRAIN_TEXT], 1 << 20))


def split(splitter, text):
    words = text.split(" ")
    numbers = sentences.sentence_numbers(splitter, words)
    out = [[] for _ in range(numbers[-1] + 1)]
    for word, number in zip(words, numbers):
        out[number].append(word)
    return [" ".join(s) for s in out]


def test_wikitext_number_markup_never_ends_a_sentence(small_splitter):
    assert split(small_splitter, "It is 0 @.@ 7 kg . It grew to 1 @,@ 000 of 2 @-@ 3 m .") == [
        "It is 0 @.@ 7 kg .", "It grew to 1 @,@ 000 of 2 @-@ 3 m ."]


def test_titles_and_initials_do_not_end_sentences(small_splitter):
    assert split(small_splitter, "Mr. Churchill met Dr. Hook at St. Paul with No. 2 Squadron and H. Milne . "
                                 "They left .") == [
        "Mr. Churchill met Dr. Hook at St. Paul with No. 2 Squadron and H. Milne .", "They left ."]


def test_closing_quotes_stay_with_their_sentence(small_splitter):
    assert split(small_splitter, 'He said " it is late . " Then he left . " Go home , " she said .') == [
        'He said " it is late . "', "Then he left .", '" Go home , " she said .']


def test_trained_models_are_seeded_with_abbreviations():
    params = sentences.train(["A short text . Another one ."], 1 << 20)
    assert {"mr", "dr", "st", "no", "jan", "u.s", "j"} <= params.abbrev_types


def read_gold():
    paragraphs, sentences_of = [], []
    for line in GOLD.read_text(encoding="utf-8").splitlines():
        if line.startswith("# line"):
            sentences_of = []
        elif not line:
            paragraphs.append(sentences_of)
        else:
            sentences_of.append(line.split(" "))
    return paragraphs


def boundaries(sentence_words):
    cuts, position = set(), 0
    for words in sentence_words[:-1]:
        position += len(words)
        cuts.add(position)
    return cuts


@pytest.mark.skipif(not WIKITEXT2_VALID.is_file(), reason="needs ../shared/data/wikitext2")
def test_precision_and_recall_on_the_gold_set():
    """Punkt trained on WikiText-2 valid (as `segatron-preprocess --sentence-splitter punkt-trained` trains it
    on a training split) against the hand-made gold set: precision >= 99%, recall >= 98%."""
    gold = read_gold()
    assert sum(len(p) - 1 for p in gold) >= 600
    path = str(WIKITEXT2_VALID)
    stream = readers.read_units(path, "wikitext", 0, os.path.getsize(path))
    splitter = sentences.load_params(sentences.train((u.text for u in stream if u.kind == units.PARAGRAPH),
                                                     5_000_000))
    true_positive = false_positive = false_negative = 0
    for paragraph in gold:
        words = [w for s in paragraph for w in s]
        numbers = sentences.sentence_numbers(splitter, words)
        ours = {k for k in range(1, len(words)) if numbers[k] != numbers[k - 1]}
        expected = boundaries(paragraph)
        true_positive += len(ours & expected)
        false_positive += len(ours - expected)
        false_negative += len(expected - ours)
    precision = true_positive / (true_positive + false_positive)
    recall = true_positive / (true_positive + false_negative)
    print(f"gold set: {true_positive + false_negative} boundaries, precision {precision:.4f}, recall {recall:.4f}")
    assert precision >= 0.99 and recall >= 0.98


def test_the_split_does_not_depend_on_the_machines_speed(small_splitter, monkeypatch):
    """NLTK's wall-clock limit on its regular expressions (``nltk.redos``, in the releases that have one) does not
    apply to Punkt: under a limit that no machine meets, a paragraph splits and Punkt trains as without one."""
    redos = pytest.importorskip("nltk.redos")
    text = 'He said " it is late . " Then he left . Mr. Smith saw it at St. Mary \'s Bay . It hides .'
    expected = split(small_splitter, text)
    trained = sentences.params_to_json(sentences.train([TRAIN_TEXT], 1 << 20))
    monkeypatch.setattr(redos, "DEFAULT_TIMEOUT", 1e-9)
    assert split(small_splitter, text) == expected
    assert sentences.params_to_json(sentences.train([TRAIN_TEXT], 1 << 20)) == trained
    assert redos.DEFAULT_TIMEOUT == 1e-9  # NLTK's own setting is put back


def test_punkt_tab_under_any_directory_name_in_nltks_format(small_splitter, tmp_path, monkeypatch):
    """Written and read without NLTK's data paths, which refuse a name with a line break; NLTK's own loader reads
    what is written."""
    odd = tmp_path / "a\nb" / "punkt_tab"
    odd.parent.mkdir()
    sentences.save(small_splitter._params, str(odd))
    identity = sentences.splitter_identity(small_splitter)
    assert sentences.splitter_identity(sentences.load(str(odd))) == identity
    plain = tmp_path / "punkt_tab"
    sentences.save(small_splitter._params, str(plain))
    monkeypatch.setattr(nltk.data, "path", [*nltk.data.path, str(tmp_path)])
    nltks = sentences.load_params(load_punkt_params(nltk.data.FileSystemPathPointer(str(plain))))
    assert sentences.splitter_identity(nltks) == identity
