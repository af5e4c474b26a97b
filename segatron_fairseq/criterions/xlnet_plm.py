"""Criterion ``xlnet_plm``: XLNet's permutation language modelling loss, the
cross-entropy of the query stream's predictions at the sampled targets (pad
targets, where a sample had fewer, are not scored). Logs loss and ppl per
target, base 2 as fairseq's."""
import math

import torch.nn.functional as F
from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass


@register_criterion("xlnet_plm", dataclass=FairseqDataclass)
class XLNetPLMCriterion(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        logits, _ = model(**sample["net_input"])  # (B, P, V)
        target = sample["target"]  # (B, P)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                               ignore_index=self.padding_idx, reduction="sum" if reduce else "none")
        ntargets = int(target.ne(self.padding_idx).sum())
        logging_output = {"loss": loss.data, "ntokens": ntargets, "nsentences": target.size(0),
                          "sample_size": ntargets}
        return loss, ntargets, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        loss = sum(log.get("loss", 0) for log in logging_outputs)
        metrics.log_scalar("loss", loss / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
