from . import segabert_mlm, segatron_lm  # noqa: F401  (register the tasks)
