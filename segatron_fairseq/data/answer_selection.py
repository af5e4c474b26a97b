"""Answer-selection examples: JSON lines ``{"question": str, "candidates":
[str, ...], "answer": int}`` (the index of the correct candidate)."""
import json
from typing import List, Tuple


def read_answer_selection(path: str) -> List[Tuple[str, List[str], int]]:
    examples = []
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: answer-selection file not found") from None
    with f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                question, candidates, answer = item["question"], item["candidates"], item["answer"]
                if not (isinstance(question, str) and isinstance(candidates, list) and candidates
                        and all(isinstance(c, str) for c in candidates) and isinstance(answer, int)):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}: line {number} is not {{\"question\": str, \"candidates\": [str, ...], "
                                 f"\"answer\": int}}") from None
            if not 0 <= answer < len(candidates):
                raise ValueError(f"{path}: line {number}: answer {answer} is not a candidate index "
                                 f"(0..{len(candidates) - 1})")
            examples.append((question, candidates, answer))
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples
