from . import segatron_lm_loss, sentence_prediction_metrics  # noqa: F401  (register the criterions)
