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

from segatron_fairseq.tasks.segabert_mlm import SPAN_BOUNDARY_HEAD


@register_criterion("span_boundary_mlm", dataclass=FairseqDataclass)
class SpanBoundaryMLMLoss(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        if not getattr(getattr(task, "cfg", None), "span_boundary_objective", False):
            raise ValueError("--criterion span_boundary_mlm needs --task segabert_mlm --span-boundary-objective")

    def forward(self, model, sample, reduce=True):
        target = sample["target"]
        masked = target.ne(self.padding_idx)
        num_masked = int(masked.sum())
        features, _ = model(**sample["net_input"], features_only=True)
        logits = model.encoder.output_layer(features, masked_tokens=masked)
        mlm = modules.cross_entropy(logits.view(-1, logits.size(-1)), target[masked], reduction="sum")
        sbo, pairs = features.new_zeros((), dtype=torch.float), 0
        if "span_offset" in sample:
            rows, columns = sample["span_offset"].ge(0).nonzero(as_tuple=True)
            pairs = len(rows)
            if pairs:
                head = model.classification_heads[SPAN_BOUNDARY_HEAD]
                sbo_logits = head(features[rows, sample["span_left"][rows, columns]],
                                  features[rows, sample["span_right"][rows, columns]],
                                  sample["span_offset"][rows, columns],
                                  model.encoder.sentence_encoder.embed_tokens.weight)
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

        sample_size, pairs = total("sample_size"), total("sbo_pairs")
        metrics.log_scalar("loss", total("loss") / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_scalar("mlm_loss", total("mlm_loss") / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_derived("mlm_ppl", lambda meters: utils.get_perplexity(meters["mlm_loss"].avg))
        if pairs:
            metrics.log_scalar("sbo_loss", total("sbo_loss") / pairs / math.log(2), pairs, round=3)
            metrics.log_derived("sbo_ppl", lambda meters: utils.get_perplexity(meters["sbo_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
