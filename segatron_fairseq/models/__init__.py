from . import segatron_xl  # noqa: F401  (registers the model and its architectures)
