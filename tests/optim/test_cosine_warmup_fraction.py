"""The cosine_warmup_fraction scheduler: fairseq's cosine with the warm-up derived from --max-update."""
import argparse
import math

import pytest
import torch
from fairseq.optim.sgd import SGD
from omegaconf import OmegaConf

from segatron_fairseq.optim.cosine_warmup_fraction import CosineWarmupFractionConfig, CosineWarmupFractionSchedule


def schedule(**options):
    cfg = OmegaConf.structured(CosineWarmupFractionConfig(**{"lr": [5e-5], "warmup_init_lr": 1e-7, "min_lr": 1e-6,
                                                            **options}))
    optimizer = SGD(argparse.Namespace(lr=[5e-5], momentum=0.0, weight_decay=0.0), [torch.nn.Parameter(torch.zeros(1))])
    return CosineWarmupFractionSchedule(cfg, optimizer)


def test_warms_up_over_a_tenth_of_the_updates_then_one_cosine_to_the_floor():
    lrs = schedule(max_update=468)  # RTE: 3 epochs of 156 batches of 16
    assert lrs.cfg.warmup_updates == 47
    assert lrs.step_update(0) == pytest.approx(1e-7)
    assert lrs.step_update(20) == pytest.approx(1e-7 + 20 * (5e-5 - 1e-7) / 47)
    assert lrs.step_update(47) == pytest.approx(5e-5)
    middle = 47 + (468 - 47) / 2
    assert lrs.step_update(int(middle)) == pytest.approx(1e-6 + 0.5 * (5e-5 - 1e-6) *
                                                         (1 + math.cos(math.pi * int(middle - 47) / (468 - 47))))
    assert lrs.step_update(467) == pytest.approx(1e-6, rel=1e-3)
    # built again from the same config (a resumed run's holds the derived warm-up): the same schedule
    again = CosineWarmupFractionSchedule(lrs.cfg, lrs.optimizer)
    assert again.step_update(20) == lrs.step_update(20)


@pytest.mark.parametrize("options, error", [
    ({"max_update": 0}, "needs --max-update"),
    ({"max_update": 100, "warmup_fraction": 1.0}, "--warmup-fraction 1.0: must be in [0, 1)"),
    ({"max_update": 100, "warmup_updates": 7}, "leave out --warmup-updates"),
])
def test_refuses_a_schedule_it_cannot_derive(options, error):
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace(")", r"\)")):
        schedule(**options)
