"""The official RACE release: ``{train,dev,test}/{middle,high}/*.txt``, each a
JSON object ``{"id", "article", "questions": [...], "options": [[4 texts], ...],
"answers": ["A"|"B"|"C"|"D", ...]}``."""
import glob
import json
import os
from dataclasses import dataclass
from typing import List, Tuple

RACE_LEVELS = ("middle", "high")
LETTERS = "ABCD"


@dataclass(frozen=True)
class RaceQuestion:
    level: str
    source: str  # file:question number, for messages
    article: str
    question: str
    options: Tuple[str, ...]
    answer: int  # index into options


def read_race(directory: str) -> List[RaceQuestion]:
    """Every question under ``directory`` (one split: its ``middle/`` and ``high/``), files in name order."""
    files = [(level, path) for level in RACE_LEVELS
             for path in sorted(glob.glob(os.path.join(directory, level, "*.txt")))]
    if not files:
        raise FileNotFoundError(f"{directory}: no RACE files (expected {os.path.join(directory, 'middle', '*.txt')} "
                                f"and {os.path.join(directory, 'high', '*.txt')})")
    questions = []
    for level, path in files:
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
            article, asked, options, answers = (record[k] for k in ("article", "questions", "options", "answers"))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a RACE file ({type(err).__name__}: {err})") from None
        if not (len(asked) == len(options) == len(answers)):
            raise ValueError(f"{path}: {len(asked)} questions, {len(options)} option lists, {len(answers)} answers")
        for number, (question, choices, answer) in enumerate(zip(asked, options, answers), start=1):
            if len(choices) != len(LETTERS) or answer not in LETTERS:
                raise ValueError(f"{path}: question {number}: needs 4 options and an answer in A-D "
                                 f"(has {len(choices)} options, answer {answer!r})")
            questions.append(RaceQuestion(level, f"{path}:{number}", article, question, tuple(choices),
                                          LETTERS.index(answer)))
    return questions
