"""Criterion ``multiple_choice_qa`` (alias ``segabert_multiple_choice``):
cross-entropy over the options' scores (one classification-head output per
option, [CLS]); reports accuracy over all examples and over each of the
task's groups (RACE: middle, high)."""
import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.criterions.example_metrics import log_loss_per_example, log_percent
from segatron_fairseq.tasks.registry_aliases import register_alias


@register_criterion("multiple_choice_qa", dataclass=FairseqDataclass)
class MultipleChoiceCriterion(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        self.head_name = task.cfg.classification_head_name
        self.groups = task.groups

    def forward(self, model, sample, reduce=True):
        scores, _ = model(**sample["net_input"], features_only=True, classification_head_name=self.head_name)
        target = sample["target"]
        scores = scores.view(target.size(0), -1).float()  # (B, K)
        loss = F.cross_entropy(scores, target, reduction="sum")
        correct = scores.argmax(dim=1).eq(target)
        size = target.numel()
        logging_output = {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": size, "sample_size": size,
                          "ncorrect": int(correct.sum())}
        for number, group in enumerate(self.groups):
            mine = sample["group"].eq(number)
            logging_output[f"n_{group}"] = int(mine.sum())
            logging_output[f"ncorrect_{group}"] = int((correct & mine).sum())
        return loss, size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        if not log_loss_per_example(logging_outputs):
            return
        log_percent("accuracy", logging_outputs, "ncorrect")
        for group in sorted({key[2:] for log in logging_outputs for key in log if key.startswith("n_")}):
            log_percent(f"accuracy_{group}", logging_outputs, f"ncorrect_{group}", f"n_{group}")

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


register_alias("criterion", "segabert_multiple_choice", "multiple_choice_qa")
