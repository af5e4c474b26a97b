from . import segatron_lm  # noqa: F401  (registers the task)
