"""Examples of several separately encoded sequences for Cross-Thought
fine-tuning: item i is a list of token lists (a pair, or a question and its
candidates); the collater pads them to (B, M, L), missing sequences all pad.

Each sequence is cut to ``max_length`` tokens on its own (``truncated`` counts
the cut ones); no example is dropped. ``sizes`` are the examples' token totals
(what ``--max-tokens`` counts), ``sequence_sizes`` their longest sequences
(what the model's positions limit)."""
from typing import List, Sequence

import numpy as np
import torch

from .example_list_dataset import ExampleListDataset


class SequenceGroupDataset(ExampleListDataset):
    def __init__(self, groups: List[Sequence[Sequence[int]]], targets: List, pad: int, max_length: int):
        if max_length < 1:
            raise ValueError(f"the longest sequence must be at least 1 token, not {max_length}")
        self.truncated = sum(len(s) > max_length for group in groups for s in group)
        groups = [[list(s)[:max_length] for s in group] for group in groups]
        super().__init__([sum(len(s) for s in g) for g in groups])
        self.sequence_sizes = np.array([max((len(s) for s in g), default=0) for g in groups], dtype=np.int64)
        self.groups, self.targets, self.pad = groups, targets, pad

    def collater(self, indices):
        if not indices:
            return {}
        groups = [self.groups[i] for i in indices]
        num_sequences = max(len(g) for g in groups)
        length = max(1, max(len(s) for g in groups for s in g))
        tokens = torch.full((len(groups), num_sequences, length), self.pad, dtype=torch.long)
        for b, group in enumerate(groups):
            for m, sequence in enumerate(group):
                tokens[b, m, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        targets = [self.targets[i] for i in indices]
        return {
            "id": torch.tensor(indices),
            "nsentences": len(indices),
            "ntokens": int(tokens.ne(self.pad).sum()),
            "net_input": {"src_tokens": tokens},
            "target": torch.tensor(targets, dtype=torch.float if isinstance(targets[0], float) else torch.long),
        }
