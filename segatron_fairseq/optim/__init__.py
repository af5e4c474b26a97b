from . import torch_lamb  # noqa: F401  (register the optimizers)
