from . import segabert_mlm, segabert_sentence_prediction, segatron_lm  # noqa: F401  (register the tasks)
