"""Criterion ``masked_lm_sop``: ALBERT's pre-training loss, masked LM plus
sentence-order prediction (``segabert_mlm --sentence-order-prediction``):

    loss = sum of the masked tokens' cross-entropies / M + mean over the B examples of the SOP cross-entropy

(M masked tokens; the returned loss is M times that, with sample size M, as
fairseq's ``masked_lm``). The encoder runs once; the MLM head reads every
position, the ``sentence_order`` head [CLS]. Logged: ``loss`` (the sum above,
base 2), ``mlm_loss`` and ``mlm_ppl`` (the masked LM alone, ``masked_lm_part``),
``sop_loss`` (base 2) and ``sop_accuracy`` (%).
"""
import math

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.criterions.masked_lm_part import log_masked_lm_part, masked_lm_part
from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.tasks.sentence_order import SENTENCE_ORDER_HEAD


@register_criterion("masked_lm_sop", dataclass=FairseqDataclass)
class MaskedLMSentenceOrderLoss(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        if not isinstance(model, EncoderInterface) or SENTENCE_ORDER_HEAD not in model.head_names() \
                or "sentence_order" not in sample:
            raise ValueError("criterion masked_lm_sop needs task segabert_mlm with --sentence-order-prediction")
        features, mlm_loss, sample_size = masked_lm_part(model, sample, self.padding_idx)
        sop_logits = model.task_head(SENTENCE_ORDER_HEAD)(features)
        labels = sample["sentence_order"]
        sop_loss = F.cross_entropy(sop_logits.float(), labels, reduction="sum")
        nsentences = labels.numel()
        loss = mlm_loss + sop_loss * sample_size / nsentences
        logging_output = {"loss": loss.data, "mlm_loss": mlm_loss.data, "sop_loss": sop_loss.data,
                          "sop_correct": (sop_logits.argmax(-1) == labels).sum().data, "ntokens": sample["ntokens"],
                          "nsentences": nsentences, "sample_size": sample_size}
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        log_masked_lm_part(logging_outputs)
        nsentences = total("nsentences")
        if nsentences:
            metrics.log_scalar("sop_loss", total("sop_loss") / nsentences / math.log(2), nsentences, round=3)
            metrics.log_scalar("sop_accuracy", 100.0 * total("sop_correct") / nsentences, nsentences, round=1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


__all__ = ["MaskedLMSentenceOrderLoss"]
