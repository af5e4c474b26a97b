from . import cosine_warmup_fraction, torch_lamb  # noqa: F401  (register the optimizers and the scheduler)
