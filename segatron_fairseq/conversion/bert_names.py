"""How fairseq's encoder names what BERT names otherwise, in both directions of
the Hugging Face importers and exporters."""
from segatron_fairseq.modules.shared_layers import layer_groups
from segatron_fairseq.segments import MASK_SYMBOL

# fairseq's special symbols -> BERT's (MASK_SYMBOL is the one the masked-LM tasks append)
BERT_SPECIAL_NAMES = {"<s>": "[CLS]", "<pad>": "[PAD]", "</s>": "[SEP]", "<unk>": "[UNK]", MASK_SYMBOL: "[MASK]"}
# fairseq's TransformerEncoderLayer -> BertLayer (both post-norm), per .weight / .bias
ENCODER_LAYER_KEYS = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
                      "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
                      "self_attn_layer_norm": "attention.output.LayerNorm", "fc1": "intermediate.dense",
                      "fc2": "output.dense", "final_layer_norm": "output.LayerNorm"}
# activations both name alike (BERT's "gelu" is the exact one, as fairseq's)
ACTIVATIONS = ("gelu", "relu")
# fairseq's TransformerEncoderLayer -> AlbertLayer (post-norm too), per .weight / .bias
ALBERT_LAYER_KEYS = {"self_attn.q_proj": "attention.query", "self_attn.k_proj": "attention.key",
                     "self_attn.v_proj": "attention.value", "self_attn.out_proj": "attention.dense",
                     "self_attn_layer_norm": "attention.LayerNorm", "fc1": "ffn", "fc2": "ffn_output",
                     "final_layer_norm": "full_layer_layer_norm"}
# Hugging Face's activation names -> fairseq's (ALBERT's gelu_new is the tanh form, fairseq's gelu_accurate)
HF_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_accurate"}
# ALBERT's sentencepiece specials named as BERT's (the rest of BERT_SPECIAL_NAMES it spells as BERT does)
ALBERT_SPECIAL_NAMES = {"<pad>": "[PAD]", "<unk>": "[UNK]"}


def check_hf_layer_groups(num_layers: int, num_groups: int, where: str) -> None:
    """Hugging Face's ALBERT puts layer l in group ``int(l / (L / G))``, a
    float division that for some (L, G) differs from ALBERT's (and our)
    ``floor(l * G / L)`` (e.g. L 18, G 14, layer 9: 6, not 7): refuse those."""
    theirs = [int(layer / (num_layers / num_groups)) for layer in range(num_layers)]
    if theirs != layer_groups(num_layers, num_groups):
        raise NotImplementedError(f"{where}: {num_groups} layer groups of {num_layers} layers, which Hugging Face's "
                                  "ALBERT assigns differently from ALBERT's floor(l * G / L)")
