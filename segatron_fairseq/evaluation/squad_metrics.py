"""SQuAD's exact match and F1, with the answer normalisation and the rules of
each version's official evaluation script (``squad_v2``: v2.0's, else v1.1's):

- normalise: lower case, drop punctuation (``string.punctuation``), drop the
  words a / an / the, collapse white space;
- a question's score is the max over its gold answers. v1.1 scores against
  every gold answer as given; v2.0 leaves out gold answers that normalise to
  nothing, and an unanswerable question's only gold answer is "" (so
  predicting "" scores 1, anything else 0);
- F1 is over the normalised words (bags, counted with multiplicity), 0 when
  they share none. v2.0 only: when the prediction or the gold is empty, F1 is
  1 if both are, else 0 (v1.1 gives 0: no word is shared);
- exact match is the same in both.

For v2.0, ``best_threshold`` chooses the no-answer threshold that maximises a
metric over the dev set, as the official script's ``best_exact`` /
``best_f1`` do: a question is answered "" when its no-answer score exceeds it.
"""
import collections
import re
import string
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, squad_v2: bool) -> float:
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if squad_v2 and (not predicted or not wanted):
        return float(predicted == wanted)
    common = sum((collections.Counter(predicted) & collections.Counter(wanted)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def gold_answers(answers: Sequence[str], squad_v2: bool) -> List[str]:
    """The gold answers a prediction is scored against: v1.1 all of them; v2.0
    those that normalise to something ([""] when none is left)."""
    if not squad_v2:
        return list(answers)
    kept = [a for a in answers if normalize_answer(a)]
    return kept or [""]


def question_scores(prediction: str, answers: Sequence[str], squad_v2: bool) -> Tuple[float, float]:
    """(exact match, F1) of one question: the max over its gold answers (0 when
    a v1.1 question has none)."""
    golds = gold_answers(answers, squad_v2)
    return (max((exact_match(prediction, g) for g in golds), default=0.0),
            max((f1_score(prediction, g, squad_v2) for g in golds), default=0.0))


@dataclass
class QuestionResult:
    """What a model said about one question: its best non-empty answer, how
    much more it scored "no answer" (``no_answer_score``; v1.1 models leave it
    at -inf) and the gold answers (empty for an unanswerable question)."""

    answer: str
    no_answer_score: float
    golds: List[str]

    def prediction(self, threshold: float) -> str:
        return "" if self.no_answer_score > threshold else self.answer


def evaluate(results: Dict[str, QuestionResult], squad_v2: bool, threshold: float = 0.0) -> Dict[str, float]:
    """exact and f1 (x 100) over all questions by the rules of v2.0
    (``squad_v2``) or v1.1, answering "" above ``threshold``."""
    if not results:
        return {"exact": 0.0, "f1": 0.0}
    scores = [question_scores(r.prediction(threshold), r.golds, squad_v2) for r in results.values()]
    return {"exact": 100 * sum(s[0] for s in scores) / len(scores),
            "f1": 100 * sum(s[1] for s in scores) / len(scores)}


def best_threshold(results: Dict[str, QuestionResult], metric: str) -> Tuple[float, float]:
    """(best score x 100, threshold) of ``metric`` ("exact" or "f1") over the
    no-answer thresholds, as the official script sweeps them: questions
    answered in order of rising no-answer score, the threshold being the score
    of the last one answered (questions with the same score go together); a
    threshold is kept only when it scores strictly better. Silencing every
    question is the start (threshold: 1 below the lowest score). v2.0's rules."""
    which = {"exact": 0, "f1": 1}[metric]

    def score(prediction: str, golds: List[str]) -> float:
        return question_scores(prediction, golds, squad_v2=True)[which]

    if not results:
        return 0.0, 0.0
    ordered = sorted(results.values(), key=lambda r: r.no_answer_score)
    total = sum(score("", r.golds) for r in ordered)
    lowest = ordered[0].no_answer_score
    best, threshold = total, lowest - 1.0 if lowest > float("-inf") else lowest
    for k, result in enumerate(ordered):
        total += score(result.answer, result.golds) - score("", result.golds)
        group_end = k + 1 == len(ordered) or ordered[k + 1].no_answer_score > result.no_answer_score
        if group_end and total > best:
            best, threshold = total, result.no_answer_score
    return 100 * best / len(ordered), threshold
