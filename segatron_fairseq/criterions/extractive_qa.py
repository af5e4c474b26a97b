"""Criterion ``extractive_qa`` (alias ``segabert_squad``): the mean of the
start and end cross-entropies over each window's tokens (target [CLS] when the
window holds no answer), and at validation the official SQuAD exact match and
F1 over the whole dev set (``span_answers`` decodes and gathers the windows,
``squad_metrics`` scores them). With the task's ``--squad-v2`` it also reports
``best_exact`` / ``best_f1`` and the no-answer thresholds that reach them
(``best_exact_thresh``, ``best_f1_thresh``), chosen on this set."""
from dataclasses import dataclass, field

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging.meters import Meter

from segatron_fairseq.criterions.example_metrics import log_loss_per_example
from segatron_fairseq.evaluation import squad_metrics
from segatron_fairseq.evaluation.span_answers import QuestionAnswers, WindowAnswer, best_spans, span_logits
from segatron_fairseq.tasks.registry_aliases import register_alias


@dataclass
class SpanPredictionConfig(FairseqDataclass):
    max_answer_tokens: int = field(default=30, metadata={"help": "longest answer decoded, in tokens"})
    no_answer_threshold: float = field(default=0.0, metadata={
        "help": "--squad-v2: answer '' when the no-answer score (best [CLS] minus best span) exceeds it"})


class SquadMeter(Meter):
    """Windows of the validation set; its value is one SQuAD figure over all their questions."""

    def __init__(self, figure: str, with_no_answer: bool, threshold: float):
        self.figure, self.with_no_answer, self.threshold = figure, with_no_answer, threshold
        self.reset()

    def reset(self):
        self.windows = []
        self._results = None  # the windows gathered by question, once per set of windows

    def update(self, windows):
        self.windows.extend(windows)
        self._results = None

    def state_dict(self):
        return {"figure": self.figure, "with_no_answer": self.with_no_answer, "threshold": self.threshold,
                "windows": self.windows}

    def load_state_dict(self, state_dict):
        self.figure, self.with_no_answer = state_dict["figure"], state_dict["with_no_answer"]
        self.threshold, self.windows = state_dict["threshold"], state_dict["windows"]
        self._results = None

    def results(self):
        if self._results is None:
            answers = QuestionAnswers(self.with_no_answer)
            for qid, score, text, null_score, golds in self.windows:
                answers.add(WindowAnswer(qid, score, text, null_score), golds)
            self._results = answers.results()
        return self._results

    @property
    def smoothed_value(self) -> float:
        results = self.results()
        if self.figure in ("exact", "f1"):
            return round(squad_metrics.evaluate(results, self.with_no_answer, self.threshold)[self.figure], 2)
        metric = self.figure[len("best_"):].replace("_thresh", "")
        best, threshold = squad_metrics.best_threshold(results, metric)
        return round(threshold if self.figure.endswith("_thresh") else best, 4 if "thresh" in self.figure else 2)


@register_criterion("extractive_qa", dataclass=SpanPredictionConfig)
class SpanPredictionCriterion(FairseqCriterion):
    def __init__(self, cfg: SpanPredictionConfig, task):
        super().__init__(task)
        self.cfg = cfg
        self.head_name = task.cfg.classification_head_name
        self.with_no_answer = task.cfg.squad_v2

    def forward(self, model, sample, reduce=True):
        start_logits, end_logits = span_logits(model, sample, self.head_name, self.padding_idx)  # (B, T) each
        target = sample["target"]
        loss = (F.cross_entropy(start_logits, target[:, 0], reduction="sum")
                + F.cross_entropy(end_logits, target[:, 1], reduction="sum")) / 2
        size = target.size(0)
        logging_output = {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": size, "sample_size": size}
        if not model.training:
            decoded = best_spans(start_logits.detach(), end_logits.detach(), sample, self.cfg.max_answer_tokens)
            logging_output["windows"] = [(w.qid, w.score, w.text, w.null_score, golds)
                                         for w, golds in zip(decoded, sample["golds"])]
            logging_output["squad"] = (self.with_no_answer, self.cfg.no_answer_threshold)
        return loss, size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        log_loss_per_example(logging_outputs)
        decoded = [log for log in logging_outputs if "windows" in log]
        if not decoded:
            return
        with_no_answer, threshold = decoded[0]["squad"]
        windows = [w for log in decoded for w in log["windows"]]
        figures = ["exact", "f1"]
        if with_no_answer:
            figures += ["best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
        for figure in figures:
            metrics.log_custom(lambda name=figure: SquadMeter(name, with_no_answer, threshold), figure, windows)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False  # windows are lists, gathered from every worker


register_alias("criterion", "segabert_squad", "extractive_qa")
