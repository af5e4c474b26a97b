"""Criterion ``segatron_lm_loss``: fairseq's adaptive-softmax loss, or plain
cross-entropy when the model has no adaptive softmax. Logs loss and ppl
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
        if getattr(model.decoder, "adaptive_softmax", None) is not None:
            return super().forward(model, sample, reduce)
        net_output = model(**sample["net_input"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)
        target = model.get_targets(sample, net_output)
        loss = F.nll_loss(lprobs.reshape(-1, lprobs.size(-1)).float(), target.reshape(-1),
                          ignore_index=self.padding_idx, reduction="sum" if reduce else "none")
        ntokens = utils.strip_pad(target, self.padding_idx).numel()
        sample_size = target.size(0) if self.sentence_avg else ntokens
        logging_output = {"loss": loss.data, "ntokens": ntokens, "nsentences": target.size(0),
                          "sample_size": sample_size}
        return loss, sample_size, logging_output
