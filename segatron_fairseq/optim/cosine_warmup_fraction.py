"""Learning-rate scheduler ``cosine_warmup_fraction``: fairseq's ``cosine``
(0.12.2: ``--lr`` the peak, ``--min-lr`` the floor, ``--warmup-init-lr`` the
start) with its warm-up given as a fraction of the run, the cloze paper's
fine-tuning schedule: a linear warm-up over the first ``--warmup-fraction``
(10%) of ``--max-update`` updates, then one cosine phase down to ``--min-lr``
at the last update. fairseq's ``cosine`` takes the warm-up as a number of
updates; this one derives it (round(fraction x max_update)) and refuses a run
without ``--max-update``, whose schedule would have no end.
"""
import logging
from dataclasses import dataclass, field

from fairseq.optim.lr_scheduler import register_lr_scheduler
from fairseq.optim.lr_scheduler.cosine_lr_scheduler import CosineLRSchedule, CosineLRScheduleConfig

logger = logging.getLogger(__name__)


@dataclass
class CosineWarmupFractionConfig(CosineLRScheduleConfig):
    warmup_fraction: float = field(default=0.1, metadata={"help": "the fraction of --max-update spent warming up "
                                                                  "linearly from --warmup-init-lr to --lr"})


@register_lr_scheduler("cosine_warmup_fraction", dataclass=CosineWarmupFractionConfig)
class CosineWarmupFractionSchedule(CosineLRSchedule):
    def __init__(self, cfg: CosineWarmupFractionConfig, fairseq_optimizer):
        if not cfg.max_update or cfg.max_update <= 0:
            raise ValueError("--lr-scheduler cosine_warmup_fraction needs --max-update (the run's updates: epochs x "
                             "updates per epoch), which sets its warm-up and the end of its cosine")
        if not 0 <= cfg.warmup_fraction < 1:
            raise ValueError(f"--warmup-fraction {cfg.warmup_fraction}: must be in [0, 1)")
        warmup_updates = round(cfg.warmup_fraction * cfg.max_update)
        # (a config this schedule was built from already holds its warm-up: a resumed run's, a second build)
        if cfg.warmup_updates not in (0, warmup_updates) or cfg.lr_period_updates > 0 or cfg.t_mult != 1:
            raise ValueError("--lr-scheduler cosine_warmup_fraction derives the warm-up and its one cosine phase from "
                             "--max-update: leave out --warmup-updates, --lr-period-updates and --t-mult")
        cfg.warmup_updates = warmup_updates  # fairseq's cosine reads it from its config at every step
        super().__init__(cfg, fairseq_optimizer)
        logger.info(f"warm-up over {cfg.warmup_updates} of {cfg.max_update} updates, then cosine to {cfg.min_lr}")
