from . import segabert_sentence_prediction, segatron_lm_loss  # noqa: F401  (register the criterions)
