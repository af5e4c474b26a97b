"""Criterion ``cloze_lm``: the cloze two-tower model's loss and the paper's
ablation (``--cloze-loss``):

- ``cloze``: each token predicted by the combination block from all its left
  and right context;
- ``bilm``: each tower alone predicts the next word (forward) or the previous
  word (backward), without the combination block; the loss is the mean of the
  two directions;
- ``cloze+bilm``: cloze + ``--bilm-weight`` (the paper's 0.15) x bilm.

Targets are the block's tokens (pad at the boundary markers and padding), so
each target is scored once per term. Logged per target, base 2 as fairseq's:
``loss``, ``cloze_loss`` / ``cloze_ppl``, ``bilm_forward_loss`` /
``bilm_forward_ppl``, ``bilm_backward_loss`` / ``bilm_backward_ppl``.
"""
import math
from dataclasses import dataclass, field

import torch
from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import ChoiceEnum, FairseqDataclass

from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerModel

CLOZE_LOSSES = ("cloze", "bilm", "cloze+bilm")
TERMS = ("cloze", "bilm_forward", "bilm_backward")


@dataclass
class ClozeLMCriterionConfig(FairseqDataclass):
    cloze_loss: ChoiceEnum(CLOZE_LOSSES) = field(default="cloze", metadata={
        "help": "cloze: the combination predicts each token; bilm: each tower predicts the next / previous "
                "token alone; cloze+bilm: both, bilm scaled by --bilm-weight"})
    bilm_weight: float = field(default=0.15, metadata={"help": "the bilm term's weight in cloze+bilm (the paper's)"})


def shifted_targets(target: torch.Tensor, pad: int):
    """(B, T) targets -> the forward tower's (token i + 1 at i) and the
    backward tower's (token i - 1 at i), pad where there is none."""
    column = target.new_full((target.size(0), 1), pad)
    return torch.cat([target[:, 1:], column], dim=1), torch.cat([column, target[:, :-1]], dim=1)


@register_criterion("cloze_lm", dataclass=ClozeLMCriterionConfig)
class ClozeLMCriterion(FairseqCriterion):
    def __init__(self, task, cloze_loss: str = "cloze", bilm_weight: float = 0.15):
        super().__init__(task)
        if bilm_weight < 0:
            raise ValueError(f"--bilm-weight {bilm_weight}: must be at least 0")
        self.cloze_loss, self.bilm_weight = cloze_loss, bilm_weight

    def forward(self, model, sample, reduce=True):
        if not isinstance(model, ClozeTwoTowerModel):
            raise ValueError(f"--criterion cloze_lm needs a cloze_two_tower model, not {type(model).__name__}")
        pad = self.padding_idx
        target = sample["target"]
        cloze, bilm = self.cloze_loss != "bilm", self.cloze_loss != "cloze"
        features = model(**sample["net_input"], cloze=cloze, bilm=bilm)
        targets = {}
        if cloze:
            targets["cloze"] = target
        if bilm:
            targets["bilm_forward"], targets["bilm_backward"] = shifted_targets(target, pad)
        names = {"cloze": "cloze", "bilm_forward": "forward", "bilm_backward": "backward"}
        nll = {}
        for term, term_target in targets.items():
            scored = term_target.ne(pad)
            nll[term] = -model.log_probs(features[names[term]], term_target)[scored].sum()
        bilm_nll = (nll["bilm_forward"] + nll["bilm_backward"]) / 2 if bilm else 0.0
        if self.cloze_loss == "cloze":
            loss = nll["cloze"]
        elif self.cloze_loss == "bilm":
            loss = bilm_nll
        else:
            loss = nll["cloze"] + self.bilm_weight * bilm_nll
        ntokens = int(target.ne(pad).sum())
        logging_output = {"loss": loss.data, "ntokens": ntokens, "nsentences": target.size(0),
                          "sample_size": ntokens, **{f"{term}_loss": value.data for term, value in nll.items()}}
        return loss, ntokens, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        metrics.log_scalar("loss", sum(log.get("loss", 0) for log in logging_outputs) / max(sample_size, 1)
                           / math.log(2), sample_size, round=3)
        for term in TERMS:
            key = f"{term}_loss"
            if any(key in log for log in logging_outputs):
                value = sum(log.get(key, 0) for log in logging_outputs) / max(sample_size, 1) / math.log(2)
                metrics.log_scalar(key, value, sample_size, round=3)
                metrics.log_derived(f"{term}_ppl", lambda meters, key=key: utils.get_perplexity(meters[key].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
