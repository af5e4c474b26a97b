"""Text from a Segatron-XL / Transformer-XL language model: sampling token by
token (``sampling``). Incremental decoding itself (the cache of keys and
values, fairseq's ``SequenceGenerator`` interface) is the decoder's,
``SegatronXLDecoder`` (``models/segatron_xl.py``)."""
