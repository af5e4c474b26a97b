"""Size checks of the Cross-Thought tasks.

A Cross-Thought sample is M short sequences that the encoder reads one by one
(500 x 64 tokens in pre-training, a question and 100 candidates in answer
selection). fairseq compares each item's ``size`` with the model's
``max_positions`` and drops what is larger; for these samples that would
compare the total of M sequences with the positions of one. Here each sample's
longest sequence (``dataset.sequence_sizes``) is checked instead, and a sample
whose sequence does not fit is an error, never silently dropped. Batching is
unchanged: ``--batch-size`` counts samples and ``--max-tokens`` the tokens of
all their sequences.
"""
import numpy as np


class PerSequenceSizeCheck:
    """Mixin for a FairseqTask whose datasets have ``sequence_sizes``."""

    def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
        if max_positions is None:
            return indices
        longest = np.asarray(dataset.sequence_sizes)[indices]
        too_long = longest > max_positions
        if too_long.any():
            first, first_size = indices[too_long][0], longest[too_long][0]
            raise ValueError(
                f"{int(too_long.sum()):,} samples hold a short sequence longer than {max_positions} tokens, the "
                f"most one sequence may have here (the model's --max-positions minus its special tokens, or "
                f"--max-tokens); sample {first} has one of {int(first_size)}. "
                f"Shorten the sequences (--sequence-length, --max-sequence-length) or raise --max-positions.")
        return indices
