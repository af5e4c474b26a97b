"""Criterion ``span_boundary_mlm``: SpanBERT's masked LM + span boundary
objective (task ``segabert_mlm --mask-span span|sentence
--span-boundary-objective``).

Per batch, as SpanBERT's code: loss = MLM / m + SBO / (n + 1), with MLM and
SBO the summed cross-entropies over the m masked tokens and the n tokens with
a boundary target (``data/span_masking.py``). fairseq divides the returned
loss by the sample size, m, so it returns MLM + SBO * m / (n + 1): the MLM
part's gradient is plain ``masked_lm``'s, and a batch's loss is SpanBERT's.

Logged (base 2, as fairseq): ``loss`` (the sum above per masked token),
``mlm_loss`` / ``mlm_ppl`` (the masked LM alone, per masked token: comparable
with ``masked_lm``'s ``loss`` / ``ppl``) and ``sbo_loss`` / ``sbo_ppl`` (per
boundary target). Batches without span fields (``--mask-span token``, e.g.
fairseq-validate with that override) are scored by the masked LM alone.
"""
import math

import torch
from fairseq import metrics, modules, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.criterions.masked_lm_part import log_masked_lm_part, masked_lm_part
from segatron_fairseq.tasks.segabert_mlm import SPAN_BOUNDARY_HEAD


@register_criterion("span_boundary_mlm", dataclass=FairseqDataclass)
class SpanBoundaryMLMLoss(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        if not getattr(getattr(task, "cfg", None), "span_boundary_objective", False):
            raise ValueError("--criterion span_boundary_mlm needs --task segabert_mlm --span-boundary-objective")

    def forward(self, model, sample, reduce=True):
        features, mlm, num_masked = masked_lm_part(model, sample, self.padding_idx)
        target = sample["target"]
        sbo, pairs = features.new_zeros((), dtype=torch.float), 0
        if "span_offset" in sample:
            rows, columns = sample["span_offset"].ge(0).nonzero(as_tuple=True)
            pairs = len(rows)
            if pairs:
                head = model.task_head(SPAN_BOUNDARY_HEAD)
                sbo_logits = head(features[rows, sample["span_left"][rows, columns]],
                                  features[rows, sample["span_right"][rows, columns]],
                                  sample["span_offset"][rows, columns],
                                  model.word_embeddings().weight)
                sbo = modules.cross_entropy(sbo_logits, target[rows, columns], reduction="sum")
        loss = mlm + sbo * (num_masked / (pairs + 1))
        logging_output = {"loss": loss.data, "mlm_loss": mlm.data, "sbo_loss": sbo.data, "sbo_pairs": pairs,
                          "ntokens": sample["ntokens"], "nsentences": sample["nsentences"],
                          "sample_size": num_masked}
        return loss, num_masked, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        log_masked_lm_part(logging_outputs)
        pairs = total("sbo_pairs")
        if pairs:
            metrics.log_scalar("sbo_loss", total("sbo_loss") / pairs / math.log(2), pairs, round=3)
            metrics.log_derived("sbo_ppl", lambda meters: utils.get_perplexity(meters["sbo_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
