"""Examples of several separately encoded sequences for Cross-Thought
fine-tuning: item i is a list of token lists (a pair, or a question and its
candidates); the collater pads them to (B, M, L), missing sequences all pad."""
from typing import List, Sequence

import torch

from .example_list_dataset import ExampleListDataset


class SequenceGroupDataset(ExampleListDataset):
    def __init__(self, groups: List[Sequence[Sequence[int]]], targets: List, pad: int, max_length: int):
        groups = [[list(s)[:max_length] for s in group] for group in groups]
        super().__init__([sum(len(s) for s in g) for g in groups])
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
