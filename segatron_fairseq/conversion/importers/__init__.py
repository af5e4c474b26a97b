"""Checkpoints of other code turned into fairseq checkpoints of this plugin's models."""
