from . import segatron_lm_loss  # noqa: F401  (registers the criterion)
