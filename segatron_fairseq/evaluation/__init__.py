"""Measuring what models do: GLUE metrics by name (``glue_metrics``), SQuAD's
official scores (``squad_metrics``) and span decoding (``span_answers``),
sentence embeddings pooled from a last layer (``sentence_embeddings``), the
loss of every token of a split read as one stream (``token_losses``), and the
memory a forward pass keeps for its backward pass (``activation_memory``)."""
