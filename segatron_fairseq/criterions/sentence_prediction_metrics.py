"""Criterion ``sentence_prediction_metrics``: fairseq's sentence_prediction
loss, plus the GLUE metrics the task asks for over the whole validation set
(accuracy, F1 of label 1, Matthews correlation, Pearson, Spearman; see
``glue_metrics``)."""
import numpy as np
import torch
from fairseq import metrics
from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import SentencePredictionConfig, SentencePredictionCriterion
from fairseq.logging.meters import Meter

from segatron_fairseq.evaluation.glue_metrics import METRICS


class PredictionMeter(Meter):
    """Collects predictions and targets; its value is a metric over all of them."""

    def __init__(self, metric: str):
        self.metric = metric
        self.reset()

    def reset(self):
        self.predictions, self.targets = [], []

    def update(self, predictions, targets):
        self.predictions.extend(predictions)
        self.targets.extend(targets)

    def state_dict(self):
        return {"metric": self.metric, "predictions": self.predictions, "targets": self.targets}

    def load_state_dict(self, state_dict):
        self.metric = state_dict["metric"]
        self.predictions, self.targets = state_dict["predictions"], state_dict["targets"]

    @property
    def smoothed_value(self) -> float:
        if not self.predictions:
            return 0.0
        value = METRICS[self.metric](np.asarray(self.predictions), np.asarray(self.targets))
        return round(100 * value, 2)


@register_criterion("sentence_prediction_metrics", dataclass=SentencePredictionConfig)
class SentencePredictionMetricsCriterion(SentencePredictionCriterion):
    def __init__(self, cfg: SentencePredictionConfig, task):
        super().__init__(cfg, task)
        # the task knows whether its target is a label or a number (GLUE presets too)
        self.regression_target = cfg.regression_target or getattr(task, "num_classes", 2) == 1
        # accuracy comes from fairseq's own ncorrect counts
        self.report = [m for m in getattr(task, "metrics", ()) if m != "accuracy"]

    def forward(self, model, sample, reduce=True):
        logits, _ = model(**sample["net_input"], features_only=True,
                          classification_head_name=self.classification_head_name)
        targets = model.get_targets(sample, [logits]).view(-1)
        if self.regression_target:
            logits = logits.view(-1).float()
            loss = torch.nn.functional.mse_loss(logits, targets.float(), reduction="sum")
            predictions = logits
        else:
            lprobs = torch.log_softmax(logits, dim=-1, dtype=torch.float32)
            loss = torch.nn.functional.nll_loss(lprobs, targets, reduction="sum")
            predictions = logits.argmax(dim=1)
        logging_output = {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": targets.numel(),
                          "sample_size": targets.numel()}
        if not self.regression_target:
            logging_output["ncorrect"] = (predictions == targets).sum()
        if self.report and not model.training:
            logging_output["predictions"] = predictions.detach().cpu().tolist()
            logging_output["targets"] = targets.detach().cpu().tolist()
            logging_output["report"] = self.report
        return loss, targets.numel(), logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        with_predictions = [log for log in logging_outputs if "predictions" in log]
        if not with_predictions:
            return
        predictions = [p for log in with_predictions for p in log["predictions"]]
        targets = [t for log in with_predictions for t in log["targets"]]
        for metric in with_predictions[0]["report"]:
            metrics.log_custom(lambda name=metric: PredictionMeter(name), metric, predictions, targets)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False  # predictions are lists, gathered from every worker
