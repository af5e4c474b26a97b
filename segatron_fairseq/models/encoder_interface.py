"""What tasks, criterions, the hub and the CLI may ask of an encoder model.

Every encoder (``SegaBERTModel`` with SpanBERT / ALBERT / ELECTRA, ``XLNetModel``,
``ClozeTwoTowerModel``, ``CrossThoughtModel``) mixes ``EncoderInterface`` in and
overrides what it can give; what it cannot give raises ``NotOfThisEncoder``
(a ``ValueError`` naming the model and the thing), so callers never probe
with ``hasattr``. Its task heads live in one ``TaskHeads`` container
(``models/task_heads.py``), saved under ``task_heads.`` (SegaBERT,
Cross-Thought: beside RoBERTa's own ``classification_heads``) or, where a
model has no other heads, under the name its checkpoints always used
(XLNet and the cloze model: ``classification_heads.``)::

    model = task.build_model(cfg)                      # any encoder
    d = model.token_feature_dim
    model.register_task_head("squad", SpanHead(d))
    features = model.token_features(**sample["net_input"])   # (B, T, d)
    logits = model.task_head("squad")(features)               # (B, T, 2)
"""
from typing import Dict, List, Optional

import torch
from torch import nn

from segatron_fairseq.models.task_heads import TaskHeads


class NotOfThisEncoder(ValueError):
    """An encoder asked for something it does not have."""


class EncoderInterface:
    """The encoder side of a model, by name (mixed into an ``nn.Module`` model).

    Class attributes:
        input_end_symbol: the symbol that closes an input (``</s>``; the cloze model's ``<s>``).
        indexes_from_input_start: True when the segment indexes count from the input's first token
            (the cloze model's blocks) instead of the document's.
        WORD_TABLE_KEY: state-dict key of the word embedding (V, E), one row per dictionary symbol.
    """

    input_end_symbol = "</s>"
    indexes_from_input_start = False
    WORD_TABLE_KEY: Optional[str] = None

    def _not_given(self, what: str) -> NotOfThisEncoder:
        return NotOfThisEncoder(f"a {type(self).__name__} gives no {what}")

    # ---- features -------------------------------------------------------------------------------

    @property
    def token_feature_dim(self) -> int:
        """d, the width of ``token_features``."""
        raise self._not_given("per-token features")

    def token_features(self, src_tokens: torch.Tensor, **net_input) -> torch.Tensor:
        """The last layer at every position.

        Args:
            src_tokens: (B, T) token ids, right-padded.
            **net_input: the rest of a fine-tuning batch's ``net_input`` (the (B, T) indexes, ``token_type``).
        Returns:
            (B, T, d) features, d = ``token_feature_dim``.
        """
        raise self._not_given("per-token features")

    # ---- tables ---------------------------------------------------------------------------------

    def index_tables(self) -> Dict[str, nn.Embedding]:
        """The segment index tables by level (``paragraph``, ``sentence``, ``token``): {} without them."""
        return {}

    def word_embeddings(self) -> nn.Embedding:
        """The input word table, (V, E) weight (E: the embedding width, d unless factorized)."""
        raise self._not_given("word embedding table")

    @property
    def layer_norm_eps(self) -> float:
        """The epsilon of the encoder's LayerNorms (a head on top takes the same)."""
        return 1e-5

    def vocabulary_tables(self) -> Dict[str, torch.Tensor]:
        """This model's tensors with one row per dictionary symbol, by state-dict key (what a fine-tuning
        dictionary's appended symbols add rows to): {} when a checkpoint of pre-training always fits."""
        return {}

    @classmethod
    def embedded_symbols(cls, state_dict: Dict[str, torch.Tensor]) -> Optional[int]:
        """Rows of the word table of a checkpoint's ``state_dict`` of this model (V), None without one."""
        table = state_dict.get(cls.WORD_TABLE_KEY) if cls.WORD_TABLE_KEY else None
        return None if table is None else table.size(0)

    # ---- heads ----------------------------------------------------------------------------------

    def task_head_container(self) -> TaskHeads:
        """The ``TaskHeads`` container of this model's task heads."""
        raise self._not_given("task heads")

    def classification_head_names(self) -> List[str]:
        """Heads outside the container, called through ``forward(classification_head_name=...)``
        (RoBERTa's ``classification_heads``)."""
        return []

    def register_task_head(self, name: str, head: nn.Module) -> None:
        """Add ``head`` as ``name`` to the task heads (saved with the model)."""
        self.task_head_container()[name] = head

    def task_head(self, name: str) -> nn.Module:
        """The head ``name``: a task head or a classification head."""
        heads = self.task_head_container()
        if name in heads:
            return heads[name]
        if name in self.classification_head_names():
            return self._classification_head(name)
        raise KeyError(f"the model has no head {name!r}; it has {self.head_names()}")

    def _classification_head(self, name: str) -> nn.Module:
        raise self._not_given("classification heads")

    def head_names(self) -> List[str]:
        """Every head's name, task and classification heads, sorted."""
        return sorted(set(self.task_head_container()) | set(self.classification_head_names()))


__all__ = ["EncoderInterface", "NotOfThisEncoder"]
