"""Incremental decoding of a Segatron-XL decoder: a cache of every layer's
keys and values, so that a new token costs one query against the window
instead of a forward over it.

``SegatronXLDecoding`` is a mixin of ``SegatronXLDecoder`` (it uses the
decoder's layers, embedding, memory and ``_run_layers``):
``start_decoding`` / ``prime_decoding`` (a prompt in one forward) give a
``DecodingCache``, ``decode_step`` adds one position to it (with
``SegatronXLLayer.step``, ``SegmentRelativeMultiheadAttention.step`` and
``segment_distances.last_query_distances``). fairseq's ``SequenceGenerator``
calls ``forward_incremental`` (the state in fairseq's ``incremental_state``,
``reorder_incremental_state`` for beams) once the task has given the decoder a
``GenerationSetup`` (``SegatronLMTask.build_generator``).
"""
import functools
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from segatron_fairseq.modules import distance_sinusoids, last_query_distances
from segatron_fairseq.segments import SEGMENT_LEVELS


@dataclass
class GenerationSetup:
    """What a Segatron-XL decoder needs to serve fairseq's ``SequenceGenerator``
    (set by ``SegatronLMTask.build_generator``): ``max_keys``, the longest
    window a query sees (training memory + segment length; the oldest keys
    are dropped beyond it), and ``new_indexer``, which makes the per-row
    object whose ``push(token)`` gives each arriving token's (sentence start,
    paragraph start) (``GenerationIndexer``; None without segment parts)."""

    max_keys: int
    new_indexer: Optional[Callable[[], object]] = None


class DecodingCache:
    """Incremental decoding state of a batch: every layer's keys and values
    (B, H, K, dh) for the K positions of the window (the memory or prompt,
    then the decoded ones), their segment counters (B, K), and the last
    counter (B,) per part; per layer, the projected sinusoids W_part R_part
    of each part's distances 0..n_part-1 (``table_sizes``), the parts' blocks
    side by side (H, dh, N), grown on demand.

    New keys and values are written in place into a buffer per layer (keys
    and values, (2, B, H, capacity, dh)); ``keys`` / ``values`` are views of
    it. The buffer doubles when full, and the window moves to its front then,
    so a step copies nothing else.
    """

    def __init__(self, keys: List[Optional[Tensor]], values: List[Optional[Tensor]], counters: Dict[str, Tensor],
                 last: Dict[str, Tensor]):
        self.keys, self.values = list(keys), list(values)
        self.counters, self.last = counters, last
        self.table_sizes: Dict[str, int] = {}
        self.position_tables: List[Optional[Tensor]] = [None] * len(self.keys)
        self._buffers: List[Optional[Tensor]] = [None] * len(self.keys)
        self._starts = [0] * len(self.keys)

    @property
    def length(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].size(2)

    def keep_last(self, positions: int) -> None:
        """Drop the oldest positions beyond the last ``positions``."""
        drop = self.length - positions
        if drop > 0:
            self.keys = [k[:, :, drop:] for k in self.keys]
            self.values = [v[:, :, drop:] for v in self.values]
            self._starts = [start + drop for start in self._starts]
            self.counters = {p: c[:, drop:] for p, c in self.counters.items()}

    def append(self, layer: int, key: Tensor, value: Tensor) -> Tuple[Tensor, Tensor]:
        """Store one new position's key and value (B, H, 1, dh) of ``layer``
        after the window's; returns the window's keys and values (B, H, K, dh)."""
        keys = self.keys[layer]
        length = 0 if keys is None else keys.size(2)
        buffer, start = self._buffers[layer], self._starts[layer]
        if buffer is None or start + length >= buffer.size(3):
            buffer = key.new_empty(2, key.size(0), key.size(1), max(64, 2 * (length + 1)), key.size(3))
            if length:
                buffer[0, :, :, :length], buffer[1, :, :, :length] = keys, self.values[layer]
            self._buffers[layer], self._starts[layer], start = buffer, 0, 0
        buffer[0, :, :, start + length], buffer[1, :, :, start + length] = key[:, :, 0], value[:, :, 0]
        self.keys[layer] = buffer[0, :, :, start:start + length + 1]
        self.values[layer] = buffer[1, :, :, start:start + length + 1]
        return self.keys[layer], self.values[layer]

    def reorder(self, new_order: Tensor) -> None:
        """Row i becomes row ``new_order[i]`` (beam search)."""
        self.keys = [k.index_select(0, new_order) for k in self.keys]
        self.values = [v.index_select(0, new_order) for v in self.values]
        self.counters = {p: c.index_select(0, new_order) for p, c in self.counters.items()}
        self.last = {p: c.index_select(0, new_order) for p, c in self.last.items()}
        self._buffers = [None] * len(self.keys)


class SegatronXLDecoding:
    """The incremental decoding methods of ``SegatronXLDecoder``."""

    def decoding_window(self, tgt_len: int) -> int:
        """The most keys a query sees when decoding a model trained on
        segments of ``tgt_len``: the memory and a segment, or mem_len with
        ``same_length``."""
        return self.cfg.mem_len if self.cfg.same_length else self.cfg.mem_len + tgt_len

    def _check_causal(self) -> None:
        segment_parts = [p for p in SEGMENT_LEVELS if p in self.part_dims]
        if segment_parts and self.cfg.segment_distance_origin == "window_end":
            raise ValueError("incremental decoding needs causal distances: with --segment-distance-origin "
                             "window_end the states of earlier positions change with every new token")

    def _cache_of(self, window: List[Tensor], counters: Dict[str, Tensor], last: Dict[str, Tensor]):
        """A cache of each layer's inputs (K, B, d) and their counters (B, K)."""
        keys, values = zip(*(layer.window_keys(h) for layer, h in zip(self.layers, window)))
        return DecodingCache(keys, values, counters, last)

    def start_decoding(self, batch: int, device: torch.device, continue_memory: bool = True) -> DecodingCache:
        """A cache that starts from the evaluation memory (if it holds ``batch``
        rows and ``continue_memory``), so decoding continues the text the model
        has read; else empty. Refused with the authors' ``window_end``
        distances: there every position's state depends on the window's last
        token, so states cannot be cached."""
        self._check_causal()
        memory = self._memory.get(False) if continue_memory else None
        parts = [p for p in SEGMENT_LEVELS if p in self.part_dims]
        if memory is None or memory.hidden[0].size(1) != batch:
            empty = torch.zeros(batch, 0, dtype=torch.long, device=device)
            return DecodingCache([None] * len(self.layers), [None] * len(self.layers), {p: empty for p in parts},
                                 {p: torch.zeros(batch, dtype=torch.long, device=device) for p in parts})
        return self._cache_of(memory.hidden, dict(memory.counters), dict(memory.last))

    def prime_decoding(self, src_tokens: Tensor, sentence_starts: Optional[Tensor] = None,
                       paragraph_starts: Optional[Tensor] = None) -> Tuple[Tensor, DecodingCache]:
        """Reads a prompt (B, T) in one forward, in evaluation mode, after the
        evaluation memory as ``start_decoding`` does (the memory is left as it
        was). Returns the features (B, d) of its last position and a cache of
        the memory and the prompt: what T calls of ``decode_step`` give, at
        the cost of one forward."""
        self._check_causal()
        memory = self._memory.get(False)
        if memory is not None and memory.hidden[0].size(1) != src_tokens.size(0):
            memory = None
        x, inputs, counters, _ = self._run_layers(src_tokens, sentence_starts, paragraph_starts, memory, False)
        if memory is not None:
            inputs = [torch.cat([m, h], dim=0) for m, h in zip(memory.hidden, inputs)]
            counters_window = {p: torch.cat([memory.counters[p], c], dim=1) for p, c in counters.items()}
        else:
            counters_window = counters
        return x[-1], self._cache_of(inputs, counters_window, {p: c[:, -1] for p, c in counters.items()})

    def _position_index(self, distances: Dict[str, Tensor], cache: DecodingCache) -> Tensor:
        """(B, P, K): each part's distances as columns of the layers' position
        tables (the part's block offset added). A part whose largest distance
        is beyond its block doubles it, and the tables are rebuilt."""
        for part, distance in distances.items():
            needed = int(distance.max()) + 1
            if cache.table_sizes.get(part, 0) < needed:
                cache.table_sizes[part] = max(needed, 2 * cache.table_sizes.get(part, 32))
                cache.position_tables = [None] * len(self.layers)
        columns, offset = [], 0
        for part, size in cache.table_sizes.items():  # the order of the tables' blocks
            columns.append(distances[part] + offset)
            offset += size
        return torch.stack(columns, dim=1)

    def _position_table(self, layer_number: int, cache: DecodingCache, dtype: torch.dtype,
                        device: torch.device) -> Tensor:
        """(H, dh, N) W_part R_part of every part's distances, blocks in part order, built once per size."""
        if cache.position_tables[layer_number] is None:
            attention = self.layers[layer_number].attention
            blocks = [attention.projected_rows(distance_sinusoids(size, self.part_dims[part], dtype, device), part)
                      for part, size in cache.table_sizes.items()]  # (n, H, dh) each
            cache.position_tables[layer_number] = torch.cat(blocks, dim=0).permute(1, 2, 0).contiguous()
        return cache.position_tables[layer_number]

    def decode_step(self, tokens: Tensor, starts: Dict[str, Tensor], cache: DecodingCache) -> Tensor:
        """Features (B, d) of one new position per row, in evaluation mode:
        ``tokens`` (B,), ``starts[part]`` (B,) bool (whether the token starts a
        sentence / paragraph, for the enabled parts); ``cache`` is updated.
        Equal to the last position of a full forward over the same window."""
        parts = list(cache.counters)
        counters = {p: cache.last[p] + starts[p].long() for p in parts}
        key_counters = {p: torch.cat([cache.counters[p], counters[p][:, None]], dim=1) for p in parts}
        with torch.autocast(tokens.device.type, enabled=False):
            x = self.embed_tokens(tokens[:, None])[:, 0] * self.embed_scale
        distances = last_query_distances(key_counters, cache.length + 1, self.cfg.clamp_len, tokens.size(0),
                                         x.device)
        position_index = self._position_index(distances, cache)
        for i, layer in enumerate(self.layers):
            bias = i if self.cfg.per_layer_position_biases else 0
            table = self._position_table(i, cache, x.dtype, x.device)
            x = layer.step(x, functools.partial(cache.append, i), table, position_index, self.content_bias[bias],
                           self.position_bias[bias])
        if self.final_norm is not None:
            x = self.final_norm(x)
        cache.counters, cache.last = key_counters, counters
        return x

    # ---- fairseq's SequenceGenerator ------------------------------------------------------------------

    def forward_incremental(self, prev_output_tokens: Tensor, incremental_state: Dict) -> Tuple[Tensor, Dict]:
        """``prev_output_tokens`` (B, t): every token so far, ``</s>`` first;
        only those not yet read go through ``decode_step``, so a new token
        costs one query against the window (at most ``generation.max_keys``
        keys). Each row's tokens are flagged as they arrive by its
        ``generation.new_indexer()`` (the leading ``</s>`` starts a sentence
        and a paragraph, as in the evaluation stream). The state lives in
        ``incremental_state`` only, so one generation call never sees
        another's. Returns the log-probabilities (B, 1, V) of the next token
        and ``extra["normalized"]``: ``get_normalized_probs`` takes a
        log-softmax of them, so fairseq's ``--temperature`` (which divides
        this output) is exact, with an adaptive softmax too."""
        setup = self.generation
        parts = [p for p in SEGMENT_LEVELS if p in self.part_dims]
        if setup is None or (parts and setup.new_indexer is None):
            raise ValueError("Segatron-XL generation needs the training corpus's sentence splitter to flag new "
                             "tokens: build the generator with --task segatron_lm (task.build_generator), or "
                             "call model.prepare_generation")
        state = self.get_incremental_state(incremental_state, "decoding")
        if state is None:
            batch = prev_output_tokens.size(0)
            state = {"cache": self.start_decoding(batch, prev_output_tokens.device, continue_memory=False),
                     "read": 0, "indexers": [setup.new_indexer() for _ in range(batch)] if parts else []}
            self.set_incremental_state(incremental_state, "decoding", state)
        cache = state["cache"]
        for position in range(state["read"], prev_output_tokens.size(1)):
            tokens = prev_output_tokens[:, position]
            if position == 0:
                flags = [(True, True)] * tokens.size(0)
            else:
                flags = [indexer.push(token) for indexer, token in zip(state["indexers"], tokens.tolist())]
            starts = {part: torch.tensor([f[i] for f in flags], device=tokens.device)
                      for i, part in enumerate(SEGMENT_LEVELS) if part in parts}
            cache.keep_last(setup.max_keys - 1)
            features = self.decode_step(tokens, starts, cache)
        state["read"] = prev_output_tokens.size(1)
        output = self.output_layer(features[:, None])
        return super().get_normalized_probs((output, None), log_probs=True), {"attn": [None], "normalized": True}

    def get_normalized_probs(self, net_output, log_probs: bool, sample=None):
        if net_output[1] is not None and net_output[1].get("normalized"):
            scores = net_output[0].float()  # log-probabilities, maybe divided by a temperature
            return F.log_softmax(scores, dim=-1) if log_probs else F.softmax(scores, dim=-1)
        return super().get_normalized_probs(net_output, log_probs, sample)

    def reorder_incremental_state(self, incremental_state: Dict, new_order: Tensor):
        """Beam search: row i of the state becomes row ``new_order[i]`` of the old one."""
        state = self.get_incremental_state(incremental_state, "decoding")
        if state is None:
            return
        state["cache"].reorder(new_order)
        state["indexers"] = [state["indexers"][i].copy() for i in new_order.tolist()] if state["indexers"] else []
