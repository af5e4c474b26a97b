"""What ``segabert_mlm --sentence-order-prediction`` adds (ALBERT's SOP): the
examples' token types and labels in the batch, and the model's
``sentence_order`` head, RoBERTa's classification head on [CLS] (dense +
tanh: BERT's pooler, then a 2-way linear), saved with the model."""
from typing import Dict, Tuple

import torch
from fairseq.data import RightPadDataset

from segatron_fairseq.data import FieldDataset

SENTENCE_ORDER_HEAD = "sentence_order"


class LabelDataset(FieldDataset):
    """An integer field of the examples batched as a (B,) tensor."""

    def collater(self, samples):
        return torch.tensor(samples, dtype=torch.long)


def sentence_order_fields(examples) -> Tuple[Dict, Dict]:
    """The batch entries of SOP examples: for ``net_input``, ``token_type``
    (padded with 0); beside it, ``sentence_order`` (B,), 1 where swapped."""
    return ({"token_type": RightPadDataset(FieldDataset(examples, "token_type"), pad_idx=0)},
            {"sentence_order": LabelDataset(examples, "sentence_order")})


def register_sentence_order_head(model) -> None:
    """Add the ``sentence_order`` head (2 classes) unless the model has it."""
    if SENTENCE_ORDER_HEAD not in model.head_names():
        model.register_classification_head(SENTENCE_ORDER_HEAD, num_classes=2)
