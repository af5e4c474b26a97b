from . import (  # noqa: F401  (register the tasks)
    cloze_lm,
    cross_thought_answer_selection,
    cross_thought_mlm,
    cross_thought_pair_classification,
    segabert_mlm,
    segabert_multiple_choice,
    segabert_sentence_prediction,
    segabert_siamese_nli,
    segabert_squad,
    segatron_lm,
    token_labelling,
    xlnet_plm,
)
