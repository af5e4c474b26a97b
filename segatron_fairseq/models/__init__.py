from . import cross_thought, segabert, segatron_xl  # noqa: F401  (register the models and their architectures)
