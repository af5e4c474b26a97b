from . import cloze_two_tower, cross_thought, segabert, segabert_electra, segatron_xl, xlnet  # noqa: F401  (register the models and their architectures)
