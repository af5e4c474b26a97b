from . import (  # noqa: F401  (register the tasks)
    cross_thought_mlm,
    segabert_mlm,
    segabert_sentence_prediction,
    segatron_lm,
)
