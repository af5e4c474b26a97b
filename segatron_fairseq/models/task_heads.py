"""The container of an encoder's task heads: the heads a task adds on top of
the encoder (answer spans, sentence pairs, span boundaries, token labels),
saved with the model under the container's name::

    model.register_task_head("squad", SpanHead(d))    # task_heads.squad.out_proj.{weight,bias}

``restore`` is the one routine that brings a checkpoint's heads into a model
(from ``upgrade_state_dict_named``): a checkpoint's head is kept when this
model has it at the same shape, this model's own fill in for a head the
checkpoint lacks (fine-tuning from a pre-trained checkpoint), the rest are
left out with a warning. ``move_heads`` renames a head's keys saved under
another prefix (SegaBERT's before 0.3.0: RoBERTa's ``classification_heads``).
"""
import logging
from typing import Dict, Iterable, List

import torch
from torch import nn

logger = logging.getLogger(__name__)


class TaskHeads(nn.ModuleDict):
    def restore(self, state_dict: Dict[str, torch.Tensor], prefix: str) -> None:
        """Bring ``state_dict``'s heads (keys ``prefix + name + "."``) to this container's heads."""
        ours = {prefix + key: value for key, value in self.state_dict().items()}
        for key in [key for key in state_dict if key.startswith(prefix)]:
            if key not in ours or state_dict[key].shape != ours[key].shape:
                logger.warning(f"leaving out {key} of the checkpoint: this model has no such head of that shape")
                del state_dict[key]
        for key, value in ours.items():
            state_dict.setdefault(key, value)

    @staticmethod
    def saved_names(state_dict: Dict[str, torch.Tensor], prefix: str) -> List[str]:
        """The names of the heads ``state_dict`` holds under ``prefix`` (keys ``prefix + name + "."...``)."""
        return sorted({key[len(prefix):].split(".")[0] for key in state_dict if key.startswith(prefix)})

    @staticmethod
    def move_heads(state_dict: Dict[str, torch.Tensor], source: str, target: str, names: Iterable[str]) -> None:
        """Each key ``source + name + "." + rest`` of the heads ``names`` becomes ``target + name + "." + rest``."""
        starts = tuple(source + name + "." for name in names)
        for key in [key for key in state_dict if key.startswith(starts)]:
            state_dict[target + key[len(source):]] = state_dict.pop(key)


__all__ = ["TaskHeads"]
