"""SegaBERT's configuration for Hugging Face transformers (remote code of a
``segatron-export`` directory): BERT's, plus the sizes of the paragraph,
sentence and token index tables, which replace the absolute positions."""
from transformers import BertConfig


class SegaBertConfig(BertConfig):
    model_type = "segabert"

    def __init__(self, max_paragraph_index=50, max_sentence_index=100, max_token_index=256, **kwargs):
        super().__init__(**kwargs)
        self.max_paragraph_index = max_paragraph_index
        self.max_sentence_index = max_sentence_index
        self.max_token_index = max_token_index
