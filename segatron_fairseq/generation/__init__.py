"""Text from a Segatron-XL / Transformer-XL language model: sampling token by
token (``sampling``). Incremental decoding itself (the cache of keys and
values, fairseq's ``SequenceGenerator`` interface) is the decoder's,
``models/segatron_xl_decoding.py``."""
