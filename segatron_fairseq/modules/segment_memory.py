"""Transformer-XL's memory with the segment counters of the cached tokens
(Segatron-XL's and XLNet's): each layer's input over the last ``mem_len``
tokens, and for each segment part (sentence, paragraph) the running counter
of those tokens and of the last one, so that the next window's counters go
on from them. Kept per mode (training, evaluation), so validation never
sees the training stream's memory; a window of another batch size starts
afresh.

    window 1 (mem_len 4):  tokens a b c d e   sentence counter 0 0 1 1 1
    cached:                        b c d e                       0 1 1 1   last 1
    window 2:              tokens f g h       starts at g:       1 2 2     (1 + the window's own count)
"""
import logging
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
from torch import Tensor

logger = logging.getLogger(__name__)


@dataclass
class CachedWindow:
    hidden: List[Tensor]  # per layer (M, B, d): the layer's input at the cached tokens
    counters: Dict[str, Tensor]  # part -> (B, M) counters of the cached tokens
    last: Dict[str, Tensor]  # part -> (B,) counter of the last token cached


class SegmentMemory:
    """The memory of one model: one ``CachedWindow`` per mode."""

    def __init__(self, model_name: str):
        self.model_name = model_name
        self._by_mode: Dict[bool, CachedWindow] = {}

    def get(self, training: bool) -> Optional[CachedWindow]:
        return self._by_mode.get(training)

    def reset(self, training: Optional[bool] = None) -> None:
        """Forget the memory of one mode (training or evaluation), or of both."""
        if training is None:
            self._by_mode.clear()
        else:
            self._by_mode.pop(training, None)

    def saved(self) -> Dict[bool, CachedWindow]:
        """The windows of both modes, for ``restore`` (a window is never changed in place)."""
        return dict(self._by_mode)

    def restore(self, saved: Dict[bool, CachedWindow]) -> None:
        self._by_mode = dict(saved)

    def current(self, training: bool, batch: int) -> Optional[CachedWindow]:
        """The memory a window of ``batch`` rows continues (None after a change of batch size)."""
        memory = self._by_mode.get(training)
        if memory is not None and memory.hidden[0].size(1) != batch:
            logger.info(f"batch size changed: {self.model_name} memory reset")
            memory = None
        return memory

    @staticmethod
    def counters(starts: Dict[str, Tensor], memory: Optional[CachedWindow]) -> Dict[str, Tensor]:
        """Running counters (B, T) of a window's start flags (part -> (B, T) bool), continuing the memory's."""
        counters = {}
        for part, flags in starts.items():
            counter = flags.long().cumsum(dim=1)
            if memory is not None:
                counter = counter + memory.last[part][:, None]
            counters[part] = counter
        return counters

    def update(self, training: bool, inputs: List[Tensor], counters: Dict[str, Tensor],
               memory: Optional[CachedWindow], mem_len: int, keep: Optional[int] = None) -> None:
        """Cache the window's layer inputs (T, B, d each) and counters (B, T) after ``memory``'s, the first
        ``keep`` positions of the window (all when None), the last ``mem_len`` tokens kept (none when 0)."""
        window = next_window(inputs, counters, memory, mem_len, keep)
        if window is not None:
            self._by_mode[training] = window


def next_window(inputs: List[Tensor], counters: Dict[str, Tensor], memory: Optional[CachedWindow], mem_len: int,
                keep: Optional[int] = None) -> Optional[CachedWindow]:
    """The memory after a window: ``memory``'s cached tokens, then the window's layer inputs (T, B, d each)
    and counters (B, T) at its first ``keep`` positions (all when None), of which the last ``mem_len`` are
    kept (detached); None when ``mem_len`` is 0 (no memory)."""
    if mem_len <= 0:
        return None
    with torch.no_grad():
        hidden = [(x[:keep] if memory is None else torch.cat([memory.hidden[i], x[:keep]], dim=0))
                  [-mem_len:].detach() for i, x in enumerate(inputs)]
        cached = {part: (c[:, :keep] if memory is None else torch.cat([memory.counters[part], c[:, :keep]], dim=1))
                  [:, -mem_len:] for part, c in counters.items()}
        last = {part: c[:, :keep][:, -1] for part, c in counters.items()}
    return CachedWindow(hidden, cached, last)
