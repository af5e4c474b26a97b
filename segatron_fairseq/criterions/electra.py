"""Criterion ``electra``: ELECTRA's replaced token detection (Clark et al.,
2020) on a ``segabert_electra`` model and ``segabert_mlm`` samples.

1. The generator predicts the masked positions (the task's masking; ELECTRA's
   is ``--leave-unmasked-prob 0.15 --random-token-prob 0``): MLM loss, the
   mean cross-entropy over the masked positions.
2. Each masked position takes a token sampled from the generator (Gumbel-max,
   temperature 1, never ``<pad>``, which would hide the position); the sample
   is an integer, so no gradient goes back through it. In training the
   draw uses torch's generator (fairseq seeds it each update); in evaluation
   each example draws from its own generator seeded with (``--seed``, the
   example's id), so fairseq-validate gives the same figures on every run and
   for any batching.
3. The discriminator reads the corrupted input; a token's label is 1 only
   where the sample differs from the original ("replaced and different").
   RTD loss: the mean binary cross-entropy over every non-pad token, [CLS]
   and [SEP] included.

loss = MLM + ``--rtd-weight`` x RTD (ELECTRA's lambda, 50), one per batch
(sample size 1). Logged in base 2 as fairseq's ``masked_lm``: ``loss``,
``gen_loss`` (with ``gen_ppl``) and ``rtd_loss``; and ``rtd_accuracy`` (over
the non-pad tokens) and ``replaced`` (the fraction of masked positions whose
sample differs from the original).
"""
import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.models.segabert_electra import SegaBERTElectraModel

logger = logging.getLogger(__name__)
INPUT_KEYS = ("src_tokens", "src_lengths")  # net_input keys that are not the encoder's indexes
EVALUATION_STREAM = 0xE1EC7B  # keeps evaluation's Gumbel draws apart from any other use of the seed


@dataclass
class ElectraCriterionConfig(FairseqDataclass):
    rtd_weight: float = field(default=50.0, metadata={"help": "lambda: loss = MLM + lambda x RTD (ELECTRA: 50)"})


def gumbel_max_sample(logits: torch.Tensor, forbidden: int, uniform: torch.Tensor) -> torch.Tensor:
    """(M, V) logits -> (M,) one token each, drawn from softmax(logits) by the
    Gumbel-max trick (argmax of logits + Gumbel noise made from ``uniform``,
    (M, V) draws in [0, 1), overwritten), never ``forbidden``; without gradient."""
    noise = uniform.clamp_(min=1e-20).log_().neg_().log_()  # -Gumbel noise: log(-log u)
    scores = logits.detach().float() - noise
    scores[:, forbidden] = -math.inf
    return scores.argmax(dim=-1)


def seeded_uniform(masked: torch.Tensor, ids: torch.Tensor, vocab: int, seed: int) -> torch.Tensor:
    """(M, V) uniform draws for the M masked positions of ``masked`` (B, T), in
    row-major order: row b's from a generator seeded with (``seed``, ``ids[b]``)
    alone, so an example gets the same draws in any batch.

        masked = [[F, T, T],     ids = [7, 3]  ->  rows 0-1 from example 7's
                  [T, F, F]]                       generator, row 2 from 3's
    """
    draws = []
    for example_id, count in zip(ids.tolist(), masked.sum(dim=1).tolist()):
        state = np.random.SeedSequence([seed, EVALUATION_STREAM, int(example_id)]).generate_state(1, np.uint64)[0]
        generator = torch.Generator(device=masked.device).manual_seed(int(state) >> 1)
        draws.append(torch.rand(count, vocab, generator=generator, device=masked.device))
    return torch.cat(draws)


def encoder_indexes(net_input: dict) -> dict:
    """The index (and token-type) tensors of a sample's ``net_input``."""
    return {key: value for key, value in net_input.items() if key not in INPUT_KEYS}


@register_criterion("electra", dataclass=ElectraCriterionConfig)
class ElectraCriterion(FairseqCriterion):
    def __init__(self, task, rtd_weight: float = 50.0):
        super().__init__(task)
        if rtd_weight < 0:
            raise ValueError(f"--rtd-weight {rtd_weight}: must be at least 0 (ELECTRA: 50)")
        self.rtd_weight = rtd_weight
        masking = getattr(task, "cfg", None)
        self.seed = getattr(masking, "seed", 1)
        if masking is not None and (masking.leave_unmasked_prob, masking.random_token_prob) != (0.15, 0.0):
            logger.warning(f"--criterion electra with --leave-unmasked-prob {masking.leave_unmasked_prob} "
                           f"--random-token-prob {masking.random_token_prob}: ELECTRA masks 85% <mask>, keeps 15% "
                           "and replaces none at random (--leave-unmasked-prob 0.15 --random-token-prob 0)")

    def forward(self, model, sample, reduce=True):
        if not isinstance(model, SegaBERTElectraModel) or not model.has_generator():
            raise ValueError(f"--criterion electra needs a pre-training segabert_electra model (--arch "
                             f"segabert_electra_* or electra_*), not {type(model).__name__}")
        net_input = sample["net_input"]
        src_tokens, target = net_input["src_tokens"], sample["target"]
        indexes = encoder_indexes(net_input)
        masked = target.ne(self.padding_idx)
        real = src_tokens.ne(self.padding_idx)
        originals = torch.where(masked, target, src_tokens)

        generator_logits = model.generate(src_tokens, masked, **indexes).float()
        mlm = F.cross_entropy(generator_logits, target[masked], reduction="sum")
        if model.training:
            uniform = torch.rand_like(generator_logits)
        else:
            uniform = seeded_uniform(masked, sample["id"], generator_logits.size(-1), self.seed)
        corrupted = src_tokens.masked_scatter(masked, gumbel_max_sample(generator_logits, self.padding_idx, uniform))
        labels = corrupted.ne(originals)
        rtd_logits = model.discriminate(corrupted, **indexes).float()
        rtd = F.binary_cross_entropy_with_logits(rtd_logits[real], labels[real].float(), reduction="sum")

        n_masked, n_tokens = int(masked.sum()), int(real.sum())
        loss = mlm / max(n_masked, 1) + self.rtd_weight * rtd / max(n_tokens, 1)
        correct = ((rtd_logits[real] > 0) == labels[real]).sum()
        logging_output = {
            "loss": loss.data, "gen_loss": mlm.data, "rtd_loss": rtd.data, "rtd_correct": correct.data,
            "replaced": labels.sum().data, "masked": n_masked, "ntokens": n_tokens,
            "nsentences": src_tokens.size(0), "sample_size": 1,
        }
        return loss, 1, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(float(log.get(key, 0)) for log in logging_outputs)

        batches, masked, tokens = total("sample_size"), max(total("masked"), 1), max(total("ntokens"), 1)
        metrics.log_scalar("loss", total("loss") / max(batches, 1) / math.log(2), batches, round=3)
        metrics.log_scalar("gen_loss", total("gen_loss") / masked / math.log(2), masked, round=3)
        metrics.log_derived("gen_ppl", lambda meters: utils.get_perplexity(meters["gen_loss"].avg))
        metrics.log_scalar("rtd_loss", total("rtd_loss") / tokens / math.log(2), tokens, round=4)
        metrics.log_scalar("rtd_accuracy", total("rtd_correct") / tokens, tokens, round=4)
        metrics.log_scalar("replaced", total("replaced") / masked, masked, round=4)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
