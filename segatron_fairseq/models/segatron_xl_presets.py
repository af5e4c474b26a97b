"""The Segatron-XL / Transformer-XL settings of the paper's WikiText-103
runs (Segatron, Table 1; what the paper does not state, such as the sizes,
segment and memory lengths and schedules, from the authors' WikiText-103 run
scripts), each written once.

``MODEL_PRESETS`` are model fields: the architectures ``*_wt103_base`` /
``*_wt103_large`` apply them, ``SegatronXLConfig``'s defaults are the base
one, and the shipped yaml files are tested against them. ``TRAINING_PRESETS``
are the other yaml keys (dotted paths), tested the same way.
"""
ADAPTIVE_WT103 = dict(adaptive_softmax_cutoff="20000,40000,200000", adaptive_input=True, tie_adaptive_weights=True,
                      tie_adaptive_proj=True)
# one u, v pair shared by all layers (Transformer-XL's PyTorch default and the authors' runs)
SHARED_BIASES = dict(per_layer_position_biases=False)

MODEL_PRESETS = {
    "wt103_base": dict(decoder_layers=16, decoder_embed_dim=410, decoder_attention_heads=10, decoder_head_dim=41,
                       decoder_ffn_embed_dim=2100, dropout=0.1, attention_dropout=0.0, mem_len=150, clamp_len=-1,
                       adaptive_softmax_factor=1.0, **ADAPTIVE_WT103, **SHARED_BIASES),
    "wt103_large": dict(decoder_layers=18, decoder_embed_dim=1024, decoder_attention_heads=16, decoder_head_dim=64,
                        decoder_ffn_embed_dim=4096, dropout=0.2, attention_dropout=0.2, mem_len=384, clamp_len=-1,
                        adaptive_softmax_factor=4.0, **ADAPTIVE_WT103, **SHARED_BIASES),
    "tiny": dict(decoder_layers=2, decoder_embed_dim=48, decoder_attention_heads=4, decoder_head_dim=12,
                 decoder_ffn_embed_dim=96, dropout=0.1, attention_dropout=0.0, mem_len=32, clamp_len=-1),
}

_OPTIMIZATION = {"optimization.lr": [0.00025], "optimization.clip_norm": 0.25, "lr_scheduler._name": "cosine",
                 "criterion._name": "segatron_lm_loss", "common.fp16": True}
TRAINING_PRESETS = {
    "wt103_base": {"task.tgt_len": 150, "dataset.batch_size": 64, "optimization.max_update": 200000,
                   "lr_scheduler.warmup_updates": 0, **_OPTIMIZATION},
    # the large run: a cosine schedule of 500k steps (reaching its minimum 484k updates after the 16k of
    # warm-up, as the authors' CosineAnnealingLR(500000) does at step 500k), stopped at 350k
    "wt103_large": {"task.tgt_len": 384, "dataset.batch_size": 128, "optimization.max_update": 350000,
                    "lr_scheduler.warmup_updates": 16000, "lr_scheduler.lr_period_updates": 484000,
                    **_OPTIMIZATION},
}

# the segment parts of R: both for Segatron-XL, none for Transformer-XL
SEGMENT_PARTS = {"segatron_xl": dict(no_sentence_part=False, no_paragraph_part=False),
                 "transformer_xl": dict(no_sentence_part=True, no_paragraph_part=True)}
