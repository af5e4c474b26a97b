"""SQuAD: the official metric's rules, the JSON reader, the paper's window
layout computed by hand, window stitching and decoding."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, fairseq_train, pretrained_kind, quick_first, run_cli

from segatron_fairseq.data.span_windows import (
    SpanWindowDataset,
    answer_tokens,
    piece_spans,
    question_windows,
    tokenize_context,
)
from segatron_fairseq.data.squad_json import read_squad
from segatron_fairseq.evaluation import squad_metrics
from segatron_fairseq.evaluation.span_answers import QuestionAnswers, best_spans
from segatron_fairseq.evaluation.squad_metrics import QuestionResult
from segatron_fairseq.segments import TABLE_SIZES
from segatron_preprocess import sentences, subwords

TRAIN_TEXT = "The crab lives near the reef . It hides under a ledge . Dr. Jones counted the crabs . " * 40


@pytest.fixture(scope="module")
def splitter():
    return sentences.load_params(sentences.train([TRAIN_TEXT], 1 << 20))


@pytest.mark.parametrize("prediction, gold, exact, f1_v1, f1_v2", [
    ("The Cat!", "cat", 1.0, 1.0, 1.0),                       # case, article, punctuation
    ("  an   apple,a pear ", "apple pear", 0.0, 0.5, 0.5),      # "apple,a" -> "applea": 1 of 2 words
    ("an apple, a pear", "apple pear", 1.0, 1.0, 1.0),
    ("the big cat", "a cat", 0.0, 2 / 3, 2 / 3),              # precision 1/2, recall 1
    ("theater", "ater", 0.0, 0.0, 0.0),                       # "the" only as a word
    ("cat\u2019s", "cats", 0.0, 0.0, 0.0),                    # only ASCII punctuation is removed
    ("cat's", "cats", 1.0, 1.0, 1.0),
    ("", "", 1.0, 0.0, 1.0),        # v2.0: no answer predicted for no answer; v1.1: no word shared
    ("", "a", 1.0, 0.0, 1.0),       # "a" normalises to nothing
    ("cat", "", 0.0, 0.0, 0.0),
    ("cat cat dog", "cat dog dog", 0.0, 2 / 3, 2 / 3),        # bags with multiplicity
])
def test_official_normalisation_and_scores(prediction, gold, exact, f1_v1, f1_v2):
    assert squad_metrics.exact_match(prediction, gold) == exact
    assert squad_metrics.f1_score(prediction, gold, squad_v2=False) == pytest.approx(f1_v1)
    assert squad_metrics.f1_score(prediction, gold, squad_v2=True) == pytest.approx(f1_v2)


def test_max_over_gold_answers_and_unanswerable():
    for squad_v2 in (False, True):
        assert squad_metrics.question_scores("Denver Broncos", ["Broncos", "the Denver Broncos", "Denver"],
                                             squad_v2) == (1.0, 1.0)
        exact, f1 = squad_metrics.question_scores("Broncos win", ["Broncos", "Denver"], squad_v2)
        assert exact == 0.0 and f1 == pytest.approx(2 / 3)
    assert squad_metrics.question_scores("", [], squad_v2=True) == (1.0, 1.0)
    assert squad_metrics.question_scores("x", ["the", "a"], squad_v2=True) == (0.0, 0.0)  # "" is the only gold


@pytest.mark.parametrize("prediction, golds, v1, v2", [
    # v1.1 keeps "The" (normalised: ""), so "an" (also "") matches it exactly, with F1 0 (no word shared);
    # v2.0 drops it and scores against "cat" alone
    ("an", ["The", "cat"], (1.0, 0.0), (0.0, 0.0)),
    ("", ["the", "cat"], (1.0, 0.0), (0.0, 0.0)),
    ("x", ["the", "a"], (0.0, 0.0), (0.0, 0.0)),
    ("the cat", ["a", "cat"], (1.0, 1.0), (1.0, 1.0)),
])
def test_empty_gold_answers_by_version(prediction, golds, v1, v2):
    """v1.1's script scores against every gold answer as given; v2.0's drops those that normalise to ""."""
    assert squad_metrics.question_scores(prediction, golds, squad_v2=False) == v1
    assert squad_metrics.question_scores(prediction, golds, squad_v2=True) == v2


def test_evaluate_by_version():
    """Two v1.1 questions (no no-answer scores): q1 answered "the" against ["A", "cat"], q2 "big cat" against
    ["cat"]. v1.1: q1 exact 1, F1 0; q2 exact 0, F1 2/3 -> exact 50, F1 33.33. v2.0: q1 scores 0 and 0."""
    results = {"q1": QuestionResult("the", float("-inf"), ["A", "cat"]),
               "q2": QuestionResult("big cat", float("-inf"), ["cat"])}
    v1 = squad_metrics.evaluate(results, squad_v2=False)
    assert v1["exact"] == 50.0 and v1["f1"] == pytest.approx(100 / 3)
    v2 = squad_metrics.evaluate(results, squad_v2=True)
    assert v2["exact"] == 0.0 and v2["f1"] == pytest.approx(100 / 3)


def test_best_threshold_by_hand():
    results = {  # answer, no-answer score, golds
        "q1": QuestionResult("cat", -2.0, ["cat"]),    # right answer, low no-answer score
        "q2": QuestionResult("dog", 1.0, []),          # unanswerable, no-answer wins at threshold 0
        "q3": QuestionResult("fish", 3.0, ["bird"]),   # answerable, silenced: wrong either way
        "q4": QuestionResult("the cow", -1.0, []),     # unanswerable, answered at threshold 0
    }
    assert squad_metrics.evaluate(results, True, 0.0) == {"exact": 50.0, "f1": 50.0}  # q1, q2 right
    best, threshold = squad_metrics.best_threshold(results, "exact")
    assert (best, threshold) == (75.0, -2.0)  # answer q1 only (the official sweep: its score), silence the rest
    assert squad_metrics.evaluate(results, True, threshold)["exact"] == 75.0
    answer_all, _ = squad_metrics.best_threshold({"q1": results["q1"]}, "f1")
    assert answer_all == 100.0


SQUAD = {"version": "v2.0", "data": [{"title": "Crabs", "paragraphs": [{
    "context": "The crab lives near the reef. It hides under a ledge.\nDr. Jones counted 12 crabs.",
    "qas": [
        {"id": "q1", "question": "Where does the crab live?", "is_impossible": False,
         "answers": [{"text": "near the reef", "answer_start": 15}, {"text": "the reef", "answer_start": 20}]},
        {"id": "q2", "question": "How many crabs did Jones count?", "is_impossible": False,
         "answers": [{"text": "12", "answer_start": 72}]},
        {"id": "q3", "question": "What colour is the crab?", "is_impossible": True, "answers": [],
         "plausible_answers": [{"text": "crab", "answer_start": 4}]},
    ]}]}]}


def test_squad_json_reader(tmp_path):
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps(SQUAD))
    q1, q2, q3 = read_squad(str(path))
    assert q1.answers == ("near the reef", "the reef") and q1.answer_start == 15
    assert q2.context[q2.answer_start:q2.answer_start + 2] == "12"
    assert q3.is_impossible and q3.answers == () and q3.answer_start is None
    broken = json.loads(json.dumps(SQUAD))
    broken["data"][0]["paragraphs"][0]["qas"][1]["answers"][0]["answer_start"] = 3
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"dev-v2.0.json: question q2: answer '12' is not at answer_start 3"):
        read_squad(str(path))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="dev-v2.0.json: not a SQuAD JSON file"):
        read_squad(str(path))


def _words_context(text, splitter, vocabulary):
    return tokenize_context(text, subwords.Words().encode, vocabulary.setdefault_index, splitter, first_paragraph=1)


class Vocabulary(dict):
    def setdefault_index(self, symbol):
        return self.setdefault(symbol, len(self) + 10)


def test_layout_by_hand(splitter):
    """The module docstring's example: question p = 0, s = 0; context paragraphs from 1, sentences from 0."""
    vocabulary = Vocabulary()
    context = _words_context("A b . C d .\nE f .", splitter, vocabulary)
    question = [vocabulary.setdefault_index(w) for w in ("who", "?")]
    (window,) = question_windows(0, question, context, None, bos=0, eos=2, max_positions=64, doc_stride=128,
                                 max_query_tokens=64, table_sizes=TABLE_SIZES)
    assert window.tokens[0] == 0 and window.tokens[3] == 2 and window.tokens[-1] == 2
    assert window.paragraph == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]
    assert window.sentence == [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0]
    assert window.token == [0, 0, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2]
    assert window.token_type == [0] * 4 + [1] * 10
    assert (window.start_position, window.end_position) == (0, 0)
    text = "A b . C d .\nE f ."
    spans = [text[a:b] for a, b in zip(window.char_start, window.char_end) if a >= 0]
    assert spans == ["A", "b", ".", "C", "d", ".", "E", "f", "."]


def test_piece_spans_follow_the_word():
    assert piece_spans(["\u2581Den", "ver", "."], 10, 17) == [(10, 13), (13, 16), (16, 17)]
    assert piece_spans(["den", "##ver"], 0, 6) == [(0, 3), (3, 6)]
    assert piece_spans(["[UNK]"], 4, 6) == [(4, 6)]  # a normaliser changed the word: the whole word


def test_an_answer_across_a_window_edge_is_found(splitter):
    """20 context tokens, windows of 8 every 4: the answer (tokens 6..9) crosses
    the first window's end; it is the target of the second window only, and
    decoding finds it there."""
    text = " ".join(f"w{k}" for k in range(20))
    vocabulary = Vocabulary()
    context = _words_context(text, splitter, vocabulary)
    start_char = text.index("w6")
    answer = answer_tokens(context, start_char, text.index("w9") + 2)
    assert answer == (6, 9)
    question = [vocabulary.setdefault_index("q")]
    windows = question_windows(0, question, context, answer, 0, 2, max_positions=12, doc_stride=4,
                               max_query_tokens=64, table_sizes=TABLE_SIZES)
    firsts = [next(k for k, c in enumerate(w.char_start) if c >= 0) for w in windows]
    assert [text[w.char_start[f]:w.char_end[f]] for w, f in zip(windows, firsts)] == ["w0", "w4", "w8", "w12"]
    assert [(w.start_position, w.end_position) for w in windows] == [(0, 0), (3 + 2, 3 + 5), (0, 0), (0, 0)]
    # token 6 is scored in the second window (2 tokens left, 5 right) rather than the first (6 left, 1 right)
    assert windows[0].may_start[3 + 6] is False and windows[1].may_start[3 + 2] is True

    class Question:
        qid, context, answers = "q", text, ("w6 w7 w8 w9",)

    batch = SpanWindowDataset(windows, [Question], pad=1).collater(list(range(len(windows))))
    start_logits = torch.zeros(batch["net_input"]["src_tokens"].shape)
    end_logits = torch.zeros_like(start_logits)
    start_logits[1, 3 + 2], end_logits[1, 3 + 5] = 5.0, 5.0  # the answer in the second window
    start_logits[0, 3 + 6], end_logits[0, 3 + 7] = 9.0, 9.0  # not a max-context start in the first
    decoded = best_spans(start_logits, end_logits, batch, max_answer_tokens=30)
    gathered = QuestionAnswers(with_no_answer=True)
    for window, golds in zip(decoded, batch["golds"]):
        gathered.add(window, golds)
    result = gathered.results()["q"]
    assert result.answer == "w6 w7 w8 w9" and result.no_answer_score == pytest.approx(0.0 - 10.0)
    assert squad_metrics.evaluate({"q": result}, squad_v2=True) == {"exact": 100.0, "f1": 100.0}
    # v1.1: no no-answer score, the span is the answer whatever the threshold
    gathered_v1 = QuestionAnswers(with_no_answer=False)
    for window, golds in zip(decoded, batch["golds"]):
        gathered_v1.add(window, golds)
    v1 = gathered_v1.results()["q"]
    assert v1.no_answer_score == float("-inf") and v1.prediction(threshold=-1e9) == "w6 w7 w8 w9"


@pytest.mark.end_to_end
def test_fine_tuned_segabert_extracts_answers_far_above_the_baselines(tmp_path):
    """scripts/squad_synthetic.py end to end on a generated WikiText file: pre-training, SQuAD v2.0 files,
    fine-tuning through fairseq-train, predictions through segatron-predict."""
    from corpus import make_documents, write_wikitext

    write_wikitext(tmp_path / "wiki.tokens", make_documents(400, seed=3))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "squad_synthetic.py"), "--wikitext",
                           str(tmp_path / "wiki.tokens"), "--workdir", str(tmp_path / "work"),
                           "--pretrain-updates", "30",
                           "--train-contexts", "200", "--dev-contexts", "40", "--epochs", "6", "--max-words", "40"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    predicted = float(re.search(r"^exact ([0-9.]+) \| f1", proc.stdout, re.M).group(1))
    em, random_em, silent_em = map(float, re.search(
        r"fine-tuned EM ([0-9.]+) \| random-span EM ([0-9.]+) \| no-answer EM ([0-9.]+)", proc.stdout).groups())
    assert em == predicted  # the predictions file scores what segatron-predict printed
    assert em >= max(random_em, silent_em) + 10, proc.stdout[-1500:]
    answers = json.loads((tmp_path / "work" / "predictions.json").read_text())
    dev = json.loads((tmp_path / "work" / "squad" / "dev-v2.0.json").read_text())
    assert set(answers) == {qa["id"] for a in dev["data"] for p in a["paragraphs"] for qa in p["qas"]}
    assert all(isinstance(text, str) for text in answers.values())


def test_a_v2_file_without_squad_v2_names_the_question(tmp_path, segabert_corpus):
    (tmp_path / "squad").mkdir()
    for name in ("train-v1.1.json", "dev-v1.1.json"):
        (tmp_path / "squad" / name).write_text(json.dumps(SQUAD))
    out = fairseq_train(tmp_path / "squad", task="extractive_qa", arch="segabert_tiny", criterion="extractive_qa",
                        save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--pretrain-data", segabert_corpus, "--max-positions", 32, "--doc-stride", 8,
                               "--batch-size", 4, "--max-update", 1])
    assert "dev-v1.1.json: question q3 (and 0 more) is_impossible: a SQuAD v2.0 file needs --squad-v2" in out


@pytest.mark.parametrize("kind", quick_first("segabert", "bert", "albert", "electra", "xlnet"))
def test_squad_v2_trains_and_predicts_with_each_pretrained_kind(tmp_path, kind, request, segabert_corpus):
    """The hand-written v2.0 file through fairseq-train (windows of 32 every 8) and segatron-predict, from SegaBERT,
    BERT, ALBERT (shared layers, factorized embedding), ELECTRA (its discriminator) and XLNet (Segatron positions)."""
    arch, options, checkpoint = pretrained_kind(request, kind)
    (tmp_path / "squad").mkdir()
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        (tmp_path / "squad" / name).write_text(json.dumps(SQUAD))
    out = fairseq_train(tmp_path / "squad", task="extractive_qa", arch=arch, criterion="extractive_qa",
                        save_dir=tmp_path / "ft",
                        extra=[*options, "--squad-v2", "--pretrain-data", segabert_corpus, "--restore-file", checkpoint,
                               "--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
                               "--max-positions", 32, "--doc-stride", 8, "--batch-size", 4, "--max-update", 2,
                               "--no-epoch-checkpoints", "--log-format", "simple"])
    assert "valid: 3 questions" in out
    assert re.search(r"valid on 'valid' subset .*\| exact [0-9.]+ \| f1 [0-9.]+ \| best_exact [0-9.]+ \| "
                     r"best_exact_thresh [-0-9.]+ \| best_f1 [0-9.]+ \| best_f1_thresh [-0-9.]+", out), out[-2000:]
    predicted = run_cli("segatron-predict", "squad", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                        "--pretrain-data", segabert_corpus, "--input", tmp_path / "squad" / "dev-v2.0.json",
                        "--out", tmp_path / "predictions.json", "--null-odds", tmp_path / "odds.json", "--cpu")
    answers = json.loads((tmp_path / "predictions.json").read_text())
    odds = json.loads((tmp_path / "odds.json").read_text())
    assert set(answers) == set(odds) == {"q1", "q2", "q3"}
    context = SQUAD["data"][0]["paragraphs"][0]["context"]
    assert all(answer == "" or answer in context for answer in answers.values())  # exact context text
    assert re.search(r"exact [0-9.]+ \| f1 [0-9.]+ \| questions 3 \| best_exact", predicted)
