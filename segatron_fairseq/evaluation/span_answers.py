"""From start / end logits to SQuAD answers.

``best_spans`` decodes each window: the span (s, e) with the highest
start[s] + end[e] among those that start at a token with its max context in
this window, end at a context token, have s <= e and are at most
``max_answer_tokens`` long; and the no-answer score start[0] + end[0] ([CLS]).
``QuestionAnswers`` gathers the windows of each question (in any order, from
any batch): its answer is the best window's span, and its no-answer score
(v2.0) is the lowest [CLS] score of its windows minus that span's score.
"""
from dataclasses import dataclass
from typing import Dict, List, Tuple

import torch

from segatron_fairseq.evaluation.squad_metrics import QuestionResult


@dataclass
class WindowAnswer:
    qid: str
    score: float  # -inf: no span could be decoded in this window
    text: str
    null_score: float


def span_logits(model, sample: dict, head_name: str, pad: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """(start, end) logits, (B, T) float each, of a ``SpanWindowDataset`` batch; -inf at padding."""
    logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=head_name)
    padding = sample["net_input"]["src_tokens"].eq(pad)
    return logits.float().masked_fill(padding[..., None], float("-inf")).unbind(dim=-1)


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, sample: dict,
               max_answer_tokens: int) -> List[WindowAnswer]:
    """One ``WindowAnswer`` per window of ``sample`` (a ``SpanWindowDataset``
    batch); logits (B, T)."""
    start_logits, end_logits = start_logits.float().cpu(), end_logits.float().cpu()
    char_start, char_end = sample["char_start"].cpu(), sample["char_end"].cpu()
    length = start_logits.size(1)
    # (B, T, T): pairs s <= e < s + max_answer_tokens, s a max-context start, e in the context
    offsets = torch.arange(length)[None, :] - torch.arange(length)[:, None]
    ok = ((offsets >= 0) & (offsets < max_answer_tokens))[None] \
        & sample["may_start"].cpu()[:, :, None] & (char_start >= 0)[:, None, :]
    scores = (start_logits[:, :, None] + end_logits[:, None, :]).masked_fill(~ok, float("-inf"))
    best_score, best = scores.flatten(1).max(dim=1)
    null_scores = start_logits[:, 0] + end_logits[:, 0]
    answers = []
    for b, (score, flat) in enumerate(zip(best_score.tolist(), best.tolist())):
        s, e = divmod(flat, length)
        text = sample["context"][b][int(char_start[b, s]):int(char_end[b, e])] if score > float("-inf") else ""
        answers.append(WindowAnswer(sample["qid"][b], score, text, float(null_scores[b])))
    return answers


class QuestionAnswers:
    """Windows gathered by question id."""

    def __init__(self, with_no_answer: bool):
        self.with_no_answer = with_no_answer
        self.best: Dict[str, WindowAnswer] = {}
        self.null: Dict[str, float] = {}
        self.golds: Dict[str, List[str]] = {}

    def add(self, window: WindowAnswer, golds: List[str]) -> None:
        if window.qid not in self.best or window.score > self.best[window.qid].score:
            self.best[window.qid] = window
        self.null[window.qid] = min(self.null.get(window.qid, float("inf")), window.null_score)
        self.golds[window.qid] = list(golds)

    def results(self) -> Dict[str, QuestionResult]:
        out = {}
        for qid, window in self.best.items():
            no_answer = self.null[qid] - window.score if self.with_no_answer else float("-inf")
            out[qid] = QuestionResult(window.text, no_answer, self.golds[qid])
        return out
