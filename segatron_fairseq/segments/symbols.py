"""The symbols the fine-tuning tasks append to a corpus's dictionary: the
masked-LM tasks' ``<mask>`` (that ``fill_mask`` and the BERT importers look
for) and the cloze model's pair separator ``<sep>`` (Baevski et al.'s "new
separator token")."""

MASK_SYMBOL = "<mask>"
SEP_SYMBOL = "<sep>"
