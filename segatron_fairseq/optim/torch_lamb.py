"""Optimizer ``torch_lamb``: LAMB (You et al., 2020; ALBERT's optimizer) in
plain PyTorch, so that it runs on CPU (fairseq's ``lamb`` is apex's fused
CUDA kernel). For each parameter tensor p with gradient g, at step t:

    m = b1 m + (1 - b1) g            v = b2 v + (1 - b2) g^2
    u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p
    r = ||p|| / ||u||  (1 when either norm is 0)
    p = p - lr r u

As ALBERT's recipe, tensors of one dimension (biases, LayerNorm weights) get
neither the weight decay nor the trust ratio (wd = 0, r = 1) unless
``--lamb-adapt-vectors``. apex's clipping of the global gradient norm is not
part of it: use fairseq's ``--clip-norm``.
"""
import ast
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer
from omegaconf import II


@dataclass
class TorchLambConfig(FairseqDataclass):
    lamb_betas: Any = field(default="(0.9, 0.999)", metadata={"help": "betas of the moments"})
    lamb_eps: float = field(default=1e-6, metadata={"help": "epsilon added to sqrt(v)"})
    weight_decay: float = field(default=0.0, metadata={"help": "weight decay (inside the trust ratio)"})
    lamb_adapt_vectors: bool = field(default=False, metadata={
        "help": "1-d tensors (biases, LayerNorm) also get weight decay and the trust ratio (ALBERT: not)"})
    lr: Any = II("optimization.lr")


class Lamb(torch.optim.Optimizer):
    """LAMB over ``params`` (see the module doc)."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-6, weight_decay: float = 0.0,
                 adapt_vectors: bool = False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      adapt_vectors=adapt_vectors))

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.float()
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(grad)
                    state["exp_avg_sq"] = torch.zeros_like(grad)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = (m / (1 - beta1 ** state["step"])) / (
                    (v / (1 - beta2 ** state["step"])).sqrt() + group["eps"])
                weights = p.float()
                adapted = p.dim() > 1 or group["adapt_vectors"]
                ratio = 1.0
                if adapted:
                    if group["weight_decay"]:
                        update.add_(weights, alpha=group["weight_decay"])
                    weight_norm, update_norm = weights.norm(), update.norm()
                    if weight_norm > 0 and update_norm > 0:
                        ratio = float(weight_norm / update_norm)
                p.add_((-group["lr"] * ratio * update).to(p.dtype))
        return loss


@register_optimizer("torch_lamb", dataclass=TorchLambConfig)
class FairseqTorchLamb(FairseqOptimizer):
    def __init__(self, cfg: TorchLambConfig, params):
        super().__init__(cfg)
        self._optimizer = Lamb(params, **self.optimizer_config)

    @property
    def optimizer_config(self):
        betas = self.cfg.lamb_betas
        return {"lr": self.cfg.lr[0] if isinstance(self.cfg.lr, Collection) else self.cfg.lr,
                "betas": ast.literal_eval(betas) if isinstance(betas, str) else tuple(betas), "eps": self.cfg.lamb_eps,
                "weight_decay": self.cfg.weight_decay, "adapt_vectors": self.cfg.lamb_adapt_vectors}

    @property
    def supports_flat_params(self):
        return False
