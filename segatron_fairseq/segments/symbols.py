"""The symbol the masked-LM tasks append to a corpus's dictionary (and that
``fill_mask`` and the BERT importers look for)."""

MASK_SYMBOL = "<mask>"
