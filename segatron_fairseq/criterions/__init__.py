from . import (  # noqa: F401  (register the criterions)
    cloze_lm,
    cross_thought_answer_selection,
    electra,
    extractive_qa,
    masked_lm_sop,
    multiple_choice_qa,
    segatron_lm_loss,
    sentence_prediction_metrics,
    siamese_nli,
    span_boundary_mlm,
    token_labelling,
    xlnet_plm,
)
