"""Criterion ``cross_thought_answer_selection``: -log alpha[0][answer] (Eq. 10),
alpha being the cross-sequence attention of the question (sequence 0) over
the candidates, averaged over heads and special tokens; reports Recall@1,
Recall@k (k = the task's ``--recall-k``) and the mean reciprocal rank."""
import torch
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.criterions.example_metrics import log_loss_per_example, log_percent


def answer_ranks(alpha, answers):
    """1-based rank of each answer among the candidates: alpha (B, K), answers (B,)."""
    correct = alpha.gather(1, answers[:, None])
    return (alpha > correct).sum(dim=1) + 1


@register_criterion("cross_thought_answer_selection", dataclass=FairseqDataclass)
class CrossThoughtAnswerSelectionCriterion(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        self.recall_k = getattr(task.cfg, "recall_k", 5)

    def forward(self, model, sample, reduce=True):
        _, extra = model(**sample["net_input"], cross_only=True)
        alpha = extra["cross_attention"][:, 0, 1:].float()  # question over candidates
        answers = sample["target"]
        correct = alpha.gather(1, answers[:, None]).squeeze(1)
        loss = -torch.log(correct.clamp_min(1e-30)).sum()
        ranks = answer_ranks(alpha.detach(), answers)
        size = answers.numel()
        return loss, size, {
            "loss": loss.data, "ntokens": sample["ntokens"], "nsentences": size, "sample_size": size,
            "hits_at_1": int((ranks == 1).sum()), "hits_at_k": int((ranks <= self.recall_k).sum()),
            "reciprocal_rank": float((1.0 / ranks.float()).sum()),
        }

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        total = log_loss_per_example(logging_outputs)
        if not total:
            return
        for key, name in (("hits_at_1", "recall_at_1"), ("hits_at_k", "recall_at_k")):
            log_percent(name, logging_outputs, key)
        reciprocal = sum(log.get("reciprocal_rank", 0) for log in logging_outputs)
        metrics.log_scalar("mrr", reciprocal / total, total, round=4)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
