"""Cross-Thought's configuration for Hugging Face transformers (remote code of a
``segatron-export`` directory): BERT's sizes, plus the N special tokens, the
positions table and the cross-sequence Transformer's layout."""
from transformers import BertConfig


class CrossThoughtConfig(BertConfig):
    model_type = "cross_thought"

    def __init__(self, num_special_tokens=5, shared_special_embedding=False, cross_layers=1,
                 share_cross_layers=False, cross_mask_self=False, no_cross_layer=False, **kwargs):
        super().__init__(**kwargs)
        self.num_special_tokens = num_special_tokens
        self.shared_special_embedding = shared_special_embedding
        self.cross_layers = cross_layers
        self.share_cross_layers = share_cross_layers
        self.cross_mask_self = cross_mask_self
        self.no_cross_layer = no_cross_layer
