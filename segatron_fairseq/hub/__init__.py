"""The hub interfaces that ``from_pretrained`` returns: raw text in, scores,
features and predictions out (``segatron_xl``, ``segabert``,
``cross_thought``, ``cloze_two_tower``), and the one loader of their checkpoints
(``checkpoints``)."""
