"""The official SQuAD JSON files (v1.1, and v2.0 with ``is_impossible``).

    {"version": "v2.0", "data": [{"title": ..., "paragraphs": [{"context": ...,
        "qas": [{"id": ..., "question": ..., "answers": [{"text": ..., "answer_start": 17}],
                 "is_impossible": false}]}]}]}

A v2.0 unanswerable question has ``is_impossible: true`` and no ``answers``
(its ``plausible_answers`` are not used). Test files may have no answers at
all: read them with ``require_answers=False``.
"""
import json
from dataclasses import dataclass
from typing import List, Optional, Tuple


@dataclass(frozen=True)
class SquadQuestion:
    qid: str
    question: str
    context: str
    answers: Tuple[str, ...]  # gold texts; () when unanswerable or unknown
    answer_start: Optional[int]  # character offset of the first answer in context (training target)
    is_impossible: bool


def read_squad(path: str, require_answers: bool = True) -> List[SquadQuestion]:
    """Every question of ``path``, in file order; a malformed entry raises
    ValueError naming the file and the question."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: SQuAD JSON file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a SQuAD JSON file ({err})") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(f"{path}: not a SQuAD JSON file (no 'data' list)")
    questions, seen = [], set()
    for article in document["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise ValueError(f"{path}: article {article.get('title')!r} has a paragraph without 'context'")
            for qa in paragraph.get("qas", []):
                question = _question(path, qa, context, require_answers)
                if question.qid in seen:
                    raise ValueError(f"{path}: question id {question.qid!r} appears twice")
                seen.add(question.qid)
                questions.append(question)
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def _question(path: str, qa: dict, context: str, require_answers: bool) -> SquadQuestion:
    qid = qa.get("id")
    if not isinstance(qid, str) or not isinstance(qa.get("question"), str):
        raise ValueError(f"{path}: a question lacks 'id' or 'question': {str(qa)[:200]}")
    impossible = bool(qa.get("is_impossible", False))
    answers = qa.get("answers", [])
    if impossible or not answers:
        if not impossible and require_answers:
            raise ValueError(f"{path}: question {qid}: no answers and not is_impossible")
        return SquadQuestion(qid, qa["question"], context, (), None, impossible)
    first = answers[0]
    start = first.get("answer_start")
    if not isinstance(start, int) or context[start:start + len(first.get("text", ""))] != first.get("text"):
        raise ValueError(f"{path}: question {qid}: answer {first.get('text')!r} is not at "
                         f"answer_start {start} of its context")
    return SquadQuestion(qid, qa["question"], context, tuple(a["text"] for a in answers), start, False)
