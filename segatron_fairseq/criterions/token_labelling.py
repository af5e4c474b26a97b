"""Criterion ``token_labelling``: the task head's loss summed over the words
of a batch (cross-entropy of each word, or the CRF's negative log-likelihood
of each window), reported per word in base 2; at validation the entity-level
``precision``, ``recall`` and ``f1`` (seqeval, the CoNLL convention:
``evaluation/entity_f1.py``) over the whole set, each sentence joined again
from its windows."""
import math
from typing import List

from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging.meters import Meter

from segatron_fairseq.evaluation.entity_f1 import entity_scores, sentences_of
from segatron_fairseq.models.token_label_heads import word_features


class EntityMeter(Meter):
    """The labelled words of the validation set; its value is one entity-level figure over all of them."""

    def __init__(self, figure: str):
        self.figure = figure
        self.reset()

    def reset(self):
        self.words = []

    def update(self, words):
        self.words.extend(words)

    def state_dict(self):
        return {"figure": self.figure, "words": self.words}

    def load_state_dict(self, state_dict):
        self.figure, self.words = state_dict["figure"], state_dict["words"]

    @property
    def smoothed_value(self) -> float:
        return round(entity_scores(*sentences_of(self.words))[self.figure], 2)


def predicted_labels(model, sample: dict, head_name: str) -> List[List[int]]:
    """Each window's label indexes, one per word, of a ``TokenWindowDataset`` batch."""
    features = word_features(model.token_features(**sample["net_input"]), sample["word_positions"])
    return model.task_head(head_name).decode(features, sample["word_mask"])


@register_criterion("token_labelling", dataclass=FairseqDataclass)
class TokenLabellingCriterion(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        self.head_name = task.cfg.classification_head_name
        self.labels = task.labels

    def forward(self, model, sample, reduce=True):
        head = model.task_head(self.head_name)
        features = word_features(model.token_features(**sample["net_input"]), sample["word_positions"])
        mask, target = sample["word_mask"], sample["target"]
        loss = head.loss(features, mask, target)
        size = int(mask.sum())
        logging_output = {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": sample["nsentences"],
                          "sample_size": size, "nwords": size}
        if not model.training:
            paths = head.decode(features.detach(), mask)
            logging_output["words"] = [
                (sentence, word, self.labels[gold], self.labels[predicted])
                for window, path, golds in zip(sample["words"], paths, target.tolist())
                for (sentence, word), predicted, gold in zip(window, path, golds)]
        return loss, size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        words = sum(log.get("nwords", 0) for log in logging_outputs)
        if words:
            loss = sum(float(log.get("loss", 0)) for log in logging_outputs)
            metrics.log_scalar("loss", loss / words / math.log(2), words, round=3)
        labelled = [w for log in logging_outputs for w in log.get("words", [])]
        if labelled:
            for figure in ("precision", "recall", "f1"):
                metrics.log_custom(lambda name=figure: EntityMeter(name), figure, labelled)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False  # labelled words are lists, gathered from every worker
