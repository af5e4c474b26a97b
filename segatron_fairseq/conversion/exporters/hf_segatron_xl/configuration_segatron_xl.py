"""Segatron-XL's configuration for Hugging Face transformers (remote code of a
``segatron-export`` directory): the fields of segatron-fairseq's
``SegatronXLConfig`` that the forward pass reads, under their names there
(``decoder_`` dropped), and the adaptive input / softmax bands."""
from transformers import PretrainedConfig


class SegatronXLConfig(PretrainedConfig):
    model_type = "segatron_xl"

    def __init__(self, vocab_size=267735, embed_dim=410, num_layers=16, attention_heads=10, head_dim=41, ffn_dim=2100,
                 dropout=0.1, attention_dropout=0.0, pre_norm=False, mem_len=150, clamp_len=-1, same_length=False,
                 per_layer_position_biases=False, sentence_part=True, paragraph_part=True,
                 segment_distance_origin="query", adaptive_input=False, adaptive_softmax_cutoff=None,
                 adaptive_softmax_factor=1.0, adaptive_softmax_bias=False, tie_adaptive_weights=False,
                 tie_adaptive_proj=False, tie_word_embeddings=False, generation_window=None, **kwargs):
        """``adaptive_softmax_cutoff``: the band ends below the vocabulary size (fairseq's
        ``--adaptive-softmax-cutoff``), or None for a token table with the output tied to it.
        ``generation_window``: the most keys a query sees in ``generate()``, as segatron-fairseq decodes (the
        memory and a training segment, or ``mem_len`` with ``same_length``; default: fairseq's default segment
        of 150 tokens)."""
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.num_layers = num_layers
        self.attention_heads = attention_heads
        self.head_dim = head_dim
        self.ffn_dim = ffn_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.pre_norm = pre_norm
        self.mem_len = mem_len
        self.clamp_len = clamp_len
        self.same_length = same_length
        self.per_layer_position_biases = per_layer_position_biases
        self.sentence_part = sentence_part
        self.paragraph_part = paragraph_part
        self.segment_distance_origin = segment_distance_origin
        self.adaptive_input = adaptive_input
        self.adaptive_softmax_cutoff = adaptive_softmax_cutoff
        self.adaptive_softmax_factor = adaptive_softmax_factor
        self.adaptive_softmax_bias = adaptive_softmax_bias
        self.tie_adaptive_weights = tie_adaptive_weights
        self.tie_adaptive_proj = tie_adaptive_proj
        if generation_window is None:
            generation_window = mem_len if same_length else mem_len + 150
        if generation_window < 1:
            raise ValueError(f"generation_window {generation_window}: a query sees at least itself")
        self.generation_window = generation_window
        # explicit: transformers 5 has no default, and the output layer (when there is no adaptive softmax)
        # reads the token table itself rather than a tied copy
        super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)
