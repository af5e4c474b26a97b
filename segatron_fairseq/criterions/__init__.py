from . import (  # noqa: F401  (register the criterions)
    cloze_lm,
    cross_thought_answer_selection,
    electra,
    masked_lm_sop,
    multiple_choice,
    segatron_lm_loss,
    sentence_prediction_metrics,
    siamese_classification,
    span_boundary_mlm,
    span_prediction,
    token_labelling,
    xlnet_plm,
)
