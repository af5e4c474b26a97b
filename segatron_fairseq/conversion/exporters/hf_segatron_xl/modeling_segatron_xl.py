"""Segatron-XL and Transformer-XL for Hugging Face transformers (remote code of
a ``segatron-export`` directory).

The attention, its distances (Eq. 3, or the authors' ``window_end``), the
layers, the layer stack and the memory are segatron-fairseq's own modules,
copied beside this file by the exporter (``segment_distances.py``,
``segment_relative_attention.py``, ``segatron_xl_layer.py``,
``segatron_xl_stack.py``, ``segment_memory.py``). This file adds what fairseq
gave the model: the adaptive input and the adaptive softmax.

Inputs (B, T): ``input_ids`` and, for a model with sentence / paragraph parts,
``sentence_starts`` / ``paragraph_starts`` (True or 1 at the first token of a
sentence / paragraph), as the directory's tokenizer gives them for raw text
(``tokenization_segment_indexes.py``, the binarizer's own modules). The
memory, each layer's input at the last ``mem_len`` tokens (M, B, d) and the
sentence / paragraph counters of those tokens, comes back as
``past_key_values`` (a ``SegatronXLMemory``); pass it with the next segment.

``generate()`` decodes as segatron-fairseq's sampler does: a query sees at
most ``generation_window`` keys (the training memory and a segment), the
prompt's last ones first; each new token's starts come from the binarizer's
rules for a token that arrives alone (``generation_indexer.py``, loaded with
the tokenizer's files by ``from_pretrained``). With the authors'
``window_end`` distances, which are not causal, every step reads the whole
window again.

One ``forward`` reads at most ``MAX_SEGMENT_TOKENS`` (4,096) tokens per row,
so its attention holds at most batch x heads x 4,096 x (4,096 + mem_len)
scores per layer; longer input is refused (``ValueError``): read a long text
segment by segment, each after the ``past_key_values`` of the one before (as
fairseq-eval-lm does).
"""
import logging
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from .configuration_segatron_xl import SegatronXLConfig
from .generation_indexer import GenerationIndexer
from .segatron_xl_layer import SegatronXLLayer
from .segatron_xl_stack import run_layer_stack, segment_starts
from .segment_distances import segment_part_dims
from .segment_memory import CachedWindow, next_window
from .tokenization_segment_indexes import SegmentIndexTokenizer

# transformers 4.35.2 copies from a local directory only the files this module imports relatively, not the
# files those import: the attention, which segatron_xl_layer imports, and the tokenizer's modules are imported here
# so that they are copied too
from .segment_relative_attention import SegmentRelativeMultiheadAttention  # noqa: F401,E402  isort: skip
from .atomic import atomic_path  # noqa: F401,E402  isort: skip
from .corpus_format import INDEX_NAMES  # noqa: F401,E402  isort: skip
from .document_items import Segmenter  # noqa: F401,E402  isort: skip
from .errors import PreprocessError  # noqa: F401,E402  isort: skip
from .indexer import DocumentIndexer  # noqa: F401,E402  isort: skip
from .layout import layout_of_texts  # noqa: F401,E402  isort: skip
from .levels import fit_to_table  # noqa: F401,E402  isort: skip
from .sentences import sentence_numbers  # noqa: F401,E402  isort: skip
from .subwords import Words  # noqa: F401,E402  isort: skip
from .units import Unit  # noqa: F401,E402  isort: skip

# transformers checks the imports of this file alone before it runs it: the packages the shipped modules
# import besides torch that transformers does not itself require (sentences: nltk, when called; subwords:
# sentencepiece) are imported here, so that a missing one is named before anything runs
from nltk import tokenize  # noqa: F401,E402  isort: skip
from sentencepiece import SentencePieceProcessor  # noqa: F401,E402  isort: skip

logger = logging.getLogger(__name__)

MAX_SEGMENT_TOKENS = 4096  # the longest input of one forward, per row (the attention grows with its square)


def band_ends(config: SegatronXLConfig) -> List[int]:
    """The end (exclusive) of each band of ids: the cutoffs, then the vocabulary size."""
    ends = list(config.adaptive_softmax_cutoff)
    return ends + [config.vocab_size] if config.vocab_size > ends[-1] else ends


def band_width(config: SegatronXLConfig, band: int) -> int:
    """The width of band ``band``'s table: d / factor^band, rounded down."""
    return int(config.embed_dim // config.adaptive_softmax_factor ** band)


class GenerationStream:
    """What ``generate()`` keeps besides the memory: the sentence / paragraph
    starts of each row's tokens so far (lists of 0 / 1), and each row's
    ``GenerationIndexer`` that flags the next token (None for a model
    without segment parts)."""

    def __init__(self, sentence: List[List[int]], paragraph: List[List[int]],
                 indexers: Optional[List[GenerationIndexer]]):
        self.sentence, self.paragraph, self.indexers = sentence, paragraph, indexers

    def push(self, tokens: Tensor) -> None:
        """The next token of each row (B,)."""
        for row, token in enumerate(tokens.tolist()):
            sentence, paragraph = self.indexers[row].push(token) if self.indexers is not None else (False, False)
            self.sentence[row].append(int(sentence))
            self.paragraph[row].append(int(paragraph))

    def starts(self, length: int, device) -> Tuple[Tensor, Tensor]:
        """The starts (B, length) of each row's last ``length`` tokens."""
        return tuple(torch.tensor([flags[-length:] for flags in rows], dtype=torch.bool, device=device)
                     for rows in (self.sentence, self.paragraph))

    def reorder(self, beam_idx: Tensor) -> "GenerationStream":
        rows = beam_idx.tolist()
        indexers = None if self.indexers is None else [self.indexers[row].copy() for row in rows]
        return GenerationStream([list(self.sentence[row]) for row in rows],
                                [list(self.paragraph[row]) for row in rows], indexers)


class SegatronXLMemory:
    """``past_key_values`` of the model: the memory after the segments read so
    far (``window``: each layer's input (M, B, d) at the last M tokens, the
    sentence / paragraph counters (B, M) of those tokens and (B,) of the last
    one), or None before the first; during ``generate()`` also its
    ``GenerationStream``. Not a transformers ``Cache`` (4.35.2 has none):
    generation only passes it back to the model."""

    is_compileable = False
    is_croppable = False

    def __init__(self, window: Optional[CachedWindow], stream: Optional[GenerationStream] = None):
        self.window, self.stream = window, stream

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """M, the number of tokens whose states the memory holds."""
        return 0 if self.window is None else self.window.hidden[0].size(0)

    def reorder_cache(self, beam_idx: Tensor) -> "SegatronXLMemory":
        """The memory of the batch rows ``beam_idx`` (B',) (beam search)."""
        window, stream = self.window, self.stream
        if window is not None:
            window = CachedWindow([h.index_select(1, beam_idx) for h in window.hidden],
                                  {p: c.index_select(0, beam_idx) for p, c in window.counters.items()},
                                  {p: c.index_select(0, beam_idx) for p, c in window.last.items()})
        return SegatronXLMemory(window, None if stream is None else stream.reorder(beam_idx))


class SegatronXLAdaptiveInput(nn.Module):
    """Adaptive input embeddings: the ids of band i (``band_ends``) look up a
    table of width d / factor^i, projected to d."""

    def __init__(self, config: SegatronXLConfig):
        super().__init__()
        ends = band_ends(config)
        self.starts, self.ends = [0] + ends[:-1], ends
        self.tables = nn.ModuleList(nn.Embedding(end - start, band_width(config, i))
                                    for i, (start, end) in enumerate(zip(self.starts, self.ends)))
        self.projections = nn.ModuleList(nn.Linear(band_width(config, i), config.embed_dim, bias=False)
                                         for i in range(len(ends)))

    def forward(self, input_ids: Tensor) -> Tensor:
        """(B, T) ids -> (B, T, d) embeddings."""
        embedded = self.projections[0].weight.new_zeros(*input_ids.shape, self.projections[0].out_features)
        for start, end, table, projection in zip(self.starts, self.ends, self.tables, self.projections):
            inside = (input_ids >= start) & (input_ids < end)
            if inside.any():
                embedded[inside] = projection(table(input_ids[inside] - start))
        return embedded


class SegatronXLAdaptiveLogSoftmax(nn.Module):
    """log p(w | h) over the whole vocabulary from an adaptive softmax, with
    the bands of ``band_ends`` (c_0 < c_1 < ...)::

        head(h)   = log_softmax([W_words h; W_gates h] + b_head)     c_0 words, then one gate per band
        log p(w)  = head(h)[w]                                      w < c_0
                  = head(h)[c_0 + i] + band_i(h)[w - c_i]            w in band i + 1 (c_i <= w < c_{i+1})
        band_i(h) = log_softmax(W_i P_i h + b_i)                    P_i: d -> d / factor^(i+1)

    The biases b exist with ``adaptive_softmax_bias`` (Transformer-XL's
    checkpoints). Tied to the adaptive input (``tie_adaptive_weights``), W_words
    and the W_i are its tables; with ``tie_adaptive_proj`` too, P_i is the
    transpose of its band's projection. The tied weights are read from the
    adaptive input passed to ``forward``, not held here."""

    def __init__(self, config: SegatronXLConfig):
        super().__init__()
        ends = band_ends(config)
        self.ends, d = ends, config.embed_dim
        self.tied = config.adaptive_input and config.tie_adaptive_weights
        self.tied_projections = self.tied and config.tie_adaptive_proj
        widths = [band_width(config, i + 1) for i in range(len(ends) - 1)]
        self.head_words = None if self.tied else nn.Linear(d, ends[0], bias=False)
        self.head_gates = nn.Linear(d, len(widths), bias=False)
        self.band_projections = None if self.tied_projections else nn.ModuleList(
            nn.Linear(d, width, bias=False) for width in widths)
        self.band_outputs = None if self.tied else nn.ModuleList(
            nn.Linear(width, end - start, bias=False) for width, start, end in zip(widths, ends, ends[1:]))
        self.head_bias = self.band_biases = None
        if config.adaptive_softmax_bias:
            self.head_bias = nn.Parameter(torch.zeros(ends[0] + len(widths)))
            self.band_biases = nn.ParameterList(nn.Parameter(torch.zeros(end - start))
                                                for start, end in zip(ends, ends[1:]))

    def forward(self, hidden: Tensor, adaptive_input: Optional[SegatronXLAdaptiveInput]) -> Tensor:
        """hidden (..., d) -> log-probabilities (..., V); ``adaptive_input``: the model's, when tied."""
        words = adaptive_input.tables[0].weight if self.tied else self.head_words.weight
        head = torch.cat([F.linear(hidden, words), self.head_gates(hidden)], dim=-1)
        if self.head_bias is not None:
            head = head + self.head_bias
        head = head.log_softmax(dim=-1)
        first = self.ends[0]
        log_probs = [head[..., :first]]
        for i in range(len(self.ends) - 1):
            if self.tied_projections:
                projected = F.linear(hidden, adaptive_input.projections[i + 1].weight.t())
            else:
                projected = self.band_projections[i](hidden)
            output = adaptive_input.tables[i + 1].weight if self.tied else self.band_outputs[i].weight
            scores = F.linear(projected, output)
            if self.band_biases is not None:
                scores = scores + self.band_biases[i]
            log_probs.append(scores.log_softmax(dim=-1) + head[..., first + i:first + i + 1])
        return torch.cat(log_probs, dim=-1)


class SegatronXLPreTrainedModel(PreTrainedModel):
    config_class = SegatronXLConfig
    base_model_prefix = "transformer"

    def _init_weights(self, module):
        """A fresh model's weights (an exported one loads all of them): normal(0.02) matrices and tables,
        zero biases, LayerNorms at 1 / 0, normal(0.02) u / v biases."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, SegatronXLModel):
            nn.init.normal_(module.content_bias, std=0.02)
            nn.init.normal_(module.position_bias, std=0.02)
        elif isinstance(module, SegatronXLAdaptiveLogSoftmax):
            for bias in ([module.head_bias] if module.head_bias is not None else []) + list(module.band_biases or []):
                nn.init.zeros_(bias)


# from_pretrained's options that say where and how to fetch files, passed on to the tokenizer
_HUB_OPTIONS = ("cache_dir", "revision", "token", "use_auth_token", "local_files_only", "force_download", "proxies",
                "subfolder")


def _given_memory(past_key_values: Optional[SegatronXLMemory],
                  cache: Optional[SegatronXLMemory]) -> Optional[SegatronXLMemory]:
    """The memory passed as ``past_key_values`` or, by transformers 5.24's generate(), as ``cache``."""
    return past_key_values if past_key_values is not None else cache


def _check_segment_length(input_ids: Tensor) -> None:
    """A forward reads at most MAX_SEGMENT_TOKENS tokens per row."""
    if input_ids.size(-1) > MAX_SEGMENT_TOKENS:
        raise ValueError(f"input_ids holds {input_ids.size(-1):,} tokens per row: SegatronXLForCausalLM reads at most "
                         f"{MAX_SEGMENT_TOKENS:,} in one forward (its attention grows with the square); read a "
                         "longer text in segments, passing each forward's past_key_values to the next")


def _check_unpadded(attention_mask: Optional[Tensor]) -> None:
    """Rows of a batch are read whole, memory first: padding would be read as text."""
    if attention_mask is not None and not bool(attention_mask.bool().all()):
        raise ValueError("attention_mask hides positions: SegatronXLForCausalLM reads every position as text "
                         "(no padding); give rows of equal length, or one row at a time")


class SegatronXLModel(SegatronXLPreTrainedModel):
    """The embedding and the layer stack with its memory: (B, T) ids -> (B, T, d) features."""

    def __init__(self, config: SegatronXLConfig):
        super().__init__(config)
        d = config.embed_dim
        self.part_dims = segment_part_dims(d, config.sentence_part, config.paragraph_part)
        self.embed_scale = d ** 0.5
        self.embed_tokens = None if config.adaptive_input else nn.Embedding(config.vocab_size, d)
        self.adaptive_input = SegatronXLAdaptiveInput(config) if config.adaptive_input else None
        self.layers = nn.ModuleList(
            SegatronXLLayer(d, config.attention_heads, config.head_dim, config.ffn_dim, self.part_dims,
                            config.dropout, config.attention_dropout, config.pre_norm)
            for _ in range(config.num_layers))
        bias_sets = config.num_layers if config.per_layer_position_biases else 1
        self.content_bias = nn.Parameter(torch.zeros(bias_sets, config.attention_heads, config.head_dim))
        self.position_bias = nn.Parameter(torch.zeros(bias_sets, config.attention_heads, config.head_dim))
        self.final_norm = nn.LayerNorm(d) if config.pre_norm else None
        self.dropout = nn.Dropout(config.dropout)
        self.post_init()

    def get_input_embeddings(self):
        return self.adaptive_input if self.embed_tokens is None else self.embed_tokens

    @property
    def has_segment_parts(self) -> bool:
        """Whether the model reads sentence / paragraph starts (Segatron-XL, not Transformer-XL)."""
        return bool(self.part_dims.keys() & {"sentence", "paragraph"})

    def forward(self, input_ids: Tensor, sentence_starts: Optional[Tensor] = None,
                paragraph_starts: Optional[Tensor] = None, past_key_values: Optional[SegatronXLMemory] = None,
                use_cache: bool = True, return_dict: Optional[bool] = None, memory_length: Optional[int] = None,
                generation_stream: Optional[GenerationStream] = None, **kwargs):
        """input_ids (B, T) after the memory ``past_key_values`` (or None: an
        empty memory); sentence_starts / paragraph_starts (B, T) bool or 0 / 1,
        needed for the enabled parts. Returns ``last_hidden_state`` (B, T, d)
        and, with ``use_cache``, the memory after this segment as
        ``past_key_values`` (newer transformers name it ``cache``): its last
        ``memory_length`` tokens (default ``mem_len``), with
        ``generation_stream`` attached. Rows are never padded: an
        ``attention_mask`` that hides a position is refused, and so is a row
        longer than ``MAX_SEGMENT_TOKENS``."""
        _check_segment_length(input_ids)
        _check_unpadded(kwargs.get("attention_mask"))
        past_key_values = _given_memory(past_key_values, kwargs.pop("cache", None))
        memory = None if past_key_values is None else past_key_values.window
        if memory is not None and memory.hidden[0].size(1) != input_ids.size(0):
            raise ValueError(f"past_key_values holds {memory.hidden[0].size(1)} rows, input_ids "
                             f"{input_ids.size(0)}")
        starts = segment_starts(self.part_dims, *(None if flags is None else flags.bool()
                                                  for flags in (sentence_starts, paragraph_starts)))
        embedded = self.get_input_embeddings()(input_ids) * self.embed_scale
        x = self.dropout(embedded.transpose(0, 1).contiguous())  # (T, B, d)
        stack = run_layer_stack(
            self.layers, x, starts, memory, self.part_dims, self.config.clamp_len,
            self.config.segment_distance_origin, self.content_bias, self.position_bias, self.config.mem_len,
            self.config.same_length, self.dropout)
        x = stack.hidden if self.final_norm is None else self.final_norm(stack.hidden)
        hidden = self.dropout(x).transpose(0, 1)
        kept = self.config.mem_len if memory_length is None else memory_length
        new_memory = None
        if use_cache:
            new_memory = SegatronXLMemory(next_window(stack.layer_inputs, stack.counters, memory, kept),
                                          generation_stream)
        if not (return_dict if return_dict is not None else self.config.return_dict):
            return hidden, new_memory
        return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=new_memory)


class SegatronXLForCausalLM(SegatronXLPreTrainedModel, GenerationMixin):
    """Segatron-XL's language model. ``logits`` (B, T, V) are the scores of the
    token after each position: the output layer tied to the token table, or,
    with an adaptive softmax, log-probabilities (a softmax of them gives the
    same distribution)."""

    def __init__(self, config: SegatronXLConfig):
        super().__init__(config)
        self.transformer = SegatronXLModel(config)
        self.adaptive_softmax = SegatronXLAdaptiveLogSoftmax(config) if config.adaptive_softmax_cutoff else None
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the memory is hidden states and counters, not keys and values

    def forward(self, input_ids: Tensor, sentence_starts: Optional[Tensor] = None,
                paragraph_starts: Optional[Tensor] = None, past_key_values: Optional[SegatronXLMemory] = None,
                labels: Optional[Tensor] = None, return_dict: Optional[bool] = None, use_cache: bool = True,
                memory_length: Optional[int] = None, generation_stream: Optional[GenerationStream] = None,
                **kwargs):
        """``SegatronXLModel.forward``'s inputs; ``labels`` (B, T): the
        tokens, shifted here as transformers' causal LMs do (position t
        predicts labels[t + 1]; -100 ignored), for ``loss``, the mean NLL.
        Returns ``logits`` (B, T, V) and the memory as ``past_key_values``."""
        memory = _given_memory(past_key_values, kwargs.pop("cache", None))
        hidden, memory = self.transformer(input_ids, sentence_starts, paragraph_starts, memory, use_cache=use_cache,
                                          return_dict=False, attention_mask=kwargs.get("attention_mask"),
                                          memory_length=memory_length, generation_stream=generation_stream)
        if self.adaptive_softmax is not None:
            logits = self.adaptive_softmax(hidden, self.transformer.adaptive_input)
        else:
            logits = F.linear(hidden, self.transformer.embed_tokens.weight)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(), ignore_index=-100)
        if not (return_dict if return_dict is not None else self.config.return_dict):
            return tuple(value for value in (loss, logits, memory) if value is not None)
        return CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=memory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """transformers' loading, then the directory's tokenizer, whose
        sub-words, splitter and dictionary flag the tokens ``generate()`` adds
        (``segment_tokenizer``; a model without segment parts needs none)."""
        model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        if model.transformer.has_segment_parts:
            hub_options = {key: kwargs[key] for key in _HUB_OPTIONS if key in kwargs}
            try:
                model.segment_tokenizer = SegmentIndexTokenizer.from_pretrained(pretrained_model_name_or_path,
                                                                                **hub_options)
            except (OSError, TypeError, ValueError) as err:  # e.g. a directory written by model.save_pretrained
                logger.warning(f"{pretrained_model_name_or_path}: no tokenizer files ({err}); the model reads and "
                               "scores, and generate() needs model.segment_tokenizer set")
        return model

    def _prompt_stream(self, input_ids: Tensor, sentence_starts: Optional[Tensor],
                       paragraph_starts: Optional[Tensor]) -> GenerationStream:
        """The stream of the prompts (B, T): their starts as given (the
        tokenizer's, the binarizer's rules for whole paragraphs) or else from
        indexers fed one token at a time (the first token, the stream's
        ``</s>``, starts both); the indexers then go on from the prompts' end."""
        rows = input_ids.tolist()
        if not self.transformer.has_segment_parts:
            return GenerationStream([[0] * len(r) for r in rows], [[0] * len(r) for r in rows], None)
        tokenizer = getattr(self, "segment_tokenizer", None)
        if tokenizer is None:
            raise ValueError("generate() of a model with sentence / paragraph parts flags each new token with the "
                             "directory's tokenizer: load the model with from_pretrained, or set "
                             "model.segment_tokenizer")
        indexers = [GenerationIndexer(tokenizer.segmenter, tokenizer.symbols, tokenizer.eos_token_id) for _ in rows]
        pushed = [[indexer.push(token) for token in row] for indexer, row in zip(indexers, rows)]
        if sentence_starts is None or paragraph_starts is None:
            sentence = [[1] + [int(s) for s, _ in flags[1:]] for flags in pushed]
            paragraph = [[1] + [int(p) for _, p in flags[1:]] for flags in pushed]
        else:
            sentence, paragraph = sentence_starts.long().tolist(), paragraph_starts.long().tolist()
        return GenerationStream(sentence, paragraph, indexers)

    def prepare_inputs_for_generation(self, input_ids: Tensor, past_key_values: Optional[SegatronXLMemory] = None,
                                      attention_mask: Optional[Tensor] = None,
                                      sentence_starts: Optional[Tensor] = None,
                                      paragraph_starts: Optional[Tensor] = None,
                                      cache: Optional[SegatronXLMemory] = None, **kwargs):
        """The prompts' last ``generation_window`` tokens first (after a memory
        given to ``generate()``, e.g. of the text before), then each new token
        after the memory of the window's other tokens (fairseq's incremental
        decoding); with ``window_end`` distances the whole window every step.
        ``sentence_starts`` / ``paragraph_starts``: the prompts' (B, T), e.g.
        ``**tokenizer(text, return_tensors="pt")``; without them the prompts
        are flagged token by token. transformers 5.24 passes the memory as
        ``cache``."""
        _check_unpadded(attention_mask)
        memory = _given_memory(past_key_values, cache)
        stream = None if memory is None else memory.stream
        window = self.config.generation_window
        causal = self.config.segment_distance_origin != "window_end" or not self.transformer.has_segment_parts
        if stream is None:  # the prompts
            if memory is not None and not causal:
                raise ValueError("generate() with window_end distances reads its whole window again at each step: "
                                 "it cannot continue after a memory; give the earlier text in the prompt")
            stream = self._prompt_stream(input_ids, sentence_starts, paragraph_starts)
            input_ids = input_ids[:, -window:]
        else:
            stream.push(input_ids[:, -1])
            input_ids, memory = (input_ids[:, -1:], memory) if causal else (input_ids[:, -window:], None)
        sentence, paragraph = stream.starts(input_ids.size(1), input_ids.device)
        return {"input_ids": input_ids, "sentence_starts": sentence, "paragraph_starts": paragraph,
                "past_key_values": memory, "use_cache": True, "memory_length": window - 1 if causal else 0,
                "generation_stream": stream}

    @staticmethod
    def _reorder_cache(past_key_values: SegatronXLMemory, beam_idx: Tensor) -> SegatronXLMemory:
        return past_key_values.reorder_cache(beam_idx)
