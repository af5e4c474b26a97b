"""Criterion ``segatron_lm_loss``: fairseq's adaptive-softmax loss (summed in
float32), or plain cross-entropy when the model has no adaptive softmax. Logs loss and ppl
(base 2, as fairseq does)."""
from dataclasses import dataclass

import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.adaptive_loss import AdaptiveLoss, AdaptiveLossConfig
from omegaconf import II


@dataclass
class SegatronLMLossConfig(AdaptiveLossConfig):
    distributed_world_size: int = II("distributed_training.distributed_world_size")


@register_criterion("segatron_lm_loss", dataclass=SegatronLMLossConfig)
class SegatronLMLoss(AdaptiveLoss):
    @classmethod
    def build_criterion(cls, cfg: SegatronLMLossConfig, task):
        if cfg.distributed_world_size > 1 and cfg.ddp_backend in {"c10d", "pytorch_ddp"}:
            raise ValueError("the adaptive softmax leaves some tail parameters unused in a step, which "
                             "PyTorch DDP rejects: use --ddp-backend legacy_ddp")
        return cls(task, cfg.sentence_avg)

    def forward(self, model, sample, reduce=True):
        if not model.has_adaptive_softmax():
            net_output = model(**sample["net_input"])
            lprobs = model.get_normalized_probs(net_output, log_probs=True)
            target = model.get_targets(sample, net_output)
            loss = F.nll_loss(lprobs.reshape(-1, lprobs.size(-1)).float(), target.reshape(-1),
                              ignore_index=self.padding_idx, reduction="sum" if reduce else "none")
        elif reduce:
            # fairseq's AdaptiveLoss sums in the model's dtype: a 64 x 150-token batch's summed loss
            # passes float16's 65504 (overflow, then a collapsing loss scale); sum in float32 here
            net_output = model(**sample["net_input"])
            target = model.get_targets(sample, net_output)
            logits, band_targets = model.adaptive_softmax_bands(net_output[0], target.reshape(-1))
            loss = sum(
                F.cross_entropy(band_logits, band_target, ignore_index=self.padding_idx,
                                reduction="none").float().sum()
                for band_logits, band_target in zip(logits, band_targets)
                if band_target is not None
            )
        else:
            return super().forward(model, sample, reduce)
        ntokens = utils.strip_pad(target, self.padding_idx).numel()
        sample_size = target.size(0) if self.sentence_avg else ntokens
        logging_output = {"loss": loss.data, "ntokens": ntokens, "nsentences": target.size(0),
                          "sample_size": sample_size}
        return loss, sample_size, logging_output
