"""Learned index embeddings (paragraph, sentence, token-in-sentence: SegaBERT's) added to a model's input."""
from typing import Dict, Optional

from torch import Tensor, nn


def add_index_embeddings(x: Tensor, tables: nn.ModuleDict, indexes: Dict[str, Optional[Tensor]],
                         missing: str) -> Tensor:
    """``x`` (B, T, d) plus ``tables[name](indexes[name])`` (each index (B, T) long) for every table, in the
    tables' order. An index that is absent is refused with ``missing`` (formatted with ``name``); one beyond
    its table is refused by name and size."""
    for name, table in tables.items():
        index = indexes.get(name)
        if index is None:
            raise ValueError(missing.format(name=name))
        if index.numel() and int(index.max()) >= table.num_embeddings:
            raise ValueError(f"{name}_index {int(index.max())} exceeds the table size {table.num_embeddings} "
                             f"(--max-{name}-index)")
        x = x + table(index)
    return x
