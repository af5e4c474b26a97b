"""Segatron-XL: Transformer-XL with token/sentence/paragraph relative positions.

``sentence_starts`` / ``paragraph_starts`` (B, T) flag the tokens that begin a
sentence / paragraph; the decoder turns them into running counters that
continue across segments through its memory, which caches each layer's input
(M, B, d) together with the counters (B, M) of the cached tokens.

Memory is kept per mode (training / evaluation), so validation in the middle
of an epoch does not disturb the training stream; the task resets it at the
start of every pass. It is not saved in checkpoints.
"""
import functools
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import FairseqIncrementalDecoder, FairseqLanguageModel, register_model
from fairseq.modules import AdaptiveInput, AdaptiveSoftmax
from omegaconf import DictConfig, open_dict
from torch import Tensor, nn

from segatron_fairseq.models.presets import register_presets
from segatron_fairseq.models.segatron_xl_decoding import DecodingCache, GenerationSetup
from segatron_fairseq.models.segatron_xl_presets import MODEL_PRESETS, SEGMENT_PARTS
from segatron_fairseq.modules import (
    ORIGINS,
    BiasedAdaptiveSoftmax,
    SegatronXLLayer,
    last_query_distances,
    segment_part_dims,
)
from segatron_fairseq.modules.segatron_xl_stack import LayerStackOutput, run_layer_stack, segment_starts
from segatron_fairseq.modules.segment_memory import CachedWindow, SegmentMemory
from segatron_fairseq.segments import SEGMENT_LEVELS

logger = logging.getLogger(__name__)
# the state-dict keys of an adaptive input's bands
_ADAPTIVE_INPUT_BAND = re.compile(r"decoder\.embed_tokens\.embeddings\.\d+\.0\.weight")
_BASE = MODEL_PRESETS["wt103_base"]


@dataclass
class SegatronXLConfig(FairseqDataclass):
    # defaults: the WikiText-103 base model (segatron_xl_presets)
    decoder_layers: int = field(default=_BASE["decoder_layers"], metadata={"help": "number of layers"})
    decoder_embed_dim: int = field(default=_BASE["decoder_embed_dim"], metadata={"help": "model width d"})
    decoder_attention_heads: int = field(default=_BASE["decoder_attention_heads"],
                                         metadata={"help": "attention heads"})
    decoder_head_dim: int = field(default=_BASE["decoder_head_dim"], metadata={"help": "width of one head"})
    decoder_ffn_embed_dim: int = field(default=_BASE["decoder_ffn_embed_dim"],
                                       metadata={"help": "feed-forward inner width"})
    dropout: float = field(default=_BASE["dropout"], metadata={"help": "dropout"})
    attention_dropout: float = field(default=_BASE["attention_dropout"],
                                     metadata={"help": "dropout on attention probabilities"})
    pre_norm: bool = field(default=False, metadata={"help": "LayerNorm before each sub-layer"})
    mem_len: int = field(default=_BASE["mem_len"], metadata={"help": "segments of memory kept, in tokens",
                                                             "min": 0})
    clamp_len: int = field(default=_BASE["clamp_len"],
                           metadata={"help": "clamp token distances to this (-1: no clamp)"})
    per_layer_position_biases: bool = field(
        default=False, metadata={"help": "one u, v pair per layer (default: one pair shared by all layers, as in "
                                         "Transformer-XL's and the authors' code)"}
    )
    same_length: bool = field(
        default=False, metadata={"help": "every query attends to the same number of keys, its last mem_len "
                                         "positions (Transformer-XL's same_length; needs mem_len > 0)"}
    )
    no_sentence_part: bool = field(default=False, metadata={"help": "drop the sentence part of R"})
    no_paragraph_part: bool = field(default=False, metadata={"help": "drop the paragraph part of R"})
    segment_distance_origin: ChoiceEnum(ORIGINS) = field(
        default="query",
        metadata={"help": "query: sentence / paragraph distances s_i - s_j, p_i - p_j (Eq. 3, causal); "
                          "window_end: the authors' code, counted back from the window's last token and "
                          "rel-shifted, which shows each query the sentence / paragraph starts after it "
                          "(only for reproducing their numbers: not a valid language model)"},
    )
    adaptive_softmax_cutoff: Optional[str] = field(
        default=None, metadata={"help": "comma separated cutoffs, e.g. 20000,40000,200000"}
    )
    adaptive_softmax_dropout: float = field(default=0.0, metadata={"help": "dropout in the softmax tails"})
    adaptive_softmax_factor: float = field(default=1.0, metadata={"help": "div_val of the tails"})
    adaptive_softmax_bias: bool = field(
        default=False, metadata={"help": "biases on the adaptive softmax's outputs (head and bands), as in "
                                         "Transformer-XL's; for imported checkpoints; not with --tie-adaptive-weights"}
    )
    adaptive_input: bool = field(default=False, metadata={"help": "adaptive input embeddings"})
    tie_adaptive_weights: bool = field(default=False, metadata={"help": "tie adaptive input and softmax"})
    tie_adaptive_proj: bool = field(default=False, metadata={"help": "tie their projections too"})
    init_std: float = field(default=0.02, metadata={"help": "std of the normal init of weights"})
    compile_layers: bool = field(
        default=False, metadata={"help": "run each layer through torch.compile (inductor: the rel-shift, mask, "
                                         "softmax, dropout, residual and LayerNorm fused into few kernels) when "
                                         "the model is on a GPU; eager on CPU. Same results to rounding"}
    )
    max_target_positions: int = field(default=1 << 20, metadata={"help": "longest evaluation stream"})


class SegatronXLDecoder(FairseqIncrementalDecoder):
    """Embeddings, the layer stack over a segment after its memory, the output
    layer; and incremental decoding: ``start_decoding`` / ``prime_decoding``
    (a prompt in one forward) give a ``DecodingCache``, ``decode_step`` adds
    one position to it (``SegatronXLLayer.step``). fairseq's
    ``SequenceGenerator`` calls ``forward_incremental`` once the task has set
    ``generation`` (a ``GenerationSetup``)."""

    def __init__(self, cfg: SegatronXLConfig, dictionary, embed_tokens: nn.Module):
        super().__init__(dictionary)
        self.cfg = cfg
        d = cfg.decoder_embed_dim
        self.embed_tokens = embed_tokens
        self.embed_scale = math.sqrt(d)
        self.part_dims = segment_part_dims(d, not cfg.no_sentence_part, not cfg.no_paragraph_part)
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(
            SegatronXLLayer(d, cfg.decoder_attention_heads, cfg.decoder_head_dim, cfg.decoder_ffn_embed_dim,
                            self.part_dims, cfg.dropout, cfg.attention_dropout, cfg.pre_norm)
            for _ in range(cfg.decoder_layers)
        )
        bias_sets = cfg.decoder_layers if cfg.per_layer_position_biases else 1
        self.content_bias = nn.Parameter(torch.zeros(bias_sets, cfg.decoder_attention_heads, cfg.decoder_head_dim))
        self.position_bias = nn.Parameter(torch.zeros(bias_sets, cfg.decoder_attention_heads, cfg.decoder_head_dim))
        self.final_norm = nn.LayerNorm(d) if cfg.pre_norm else None
        self.adaptive_softmax = None
        if cfg.adaptive_softmax_cutoff:
            cutoff = utils.eval_str_list(cfg.adaptive_softmax_cutoff, type=int)
            softmax = BiasedAdaptiveSoftmax if cfg.adaptive_softmax_bias else AdaptiveSoftmax
            self.adaptive_softmax = softmax(
                len(dictionary), d, cutoff, cfg.adaptive_softmax_dropout, factor=cfg.adaptive_softmax_factor,
                adaptive_inputs=embed_tokens if cfg.tie_adaptive_weights else None,
                tie_proj=cfg.tie_adaptive_proj,
            )
        self._memory = SegmentMemory("Segatron-XL")
        self._compiled_layers: Optional[List[nn.Module]] = None  # built on the first GPU forward
        self.generation: Optional[GenerationSetup] = None  # set for fairseq's SequenceGenerator
        self._init_weights()

    def _init_weights(self):
        for layer in self.layers:
            for module in layer.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=self.cfg.init_std)
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)
        nn.init.normal_(self.content_bias, std=self.cfg.init_std)
        nn.init.normal_(self.position_bias, std=self.cfg.init_std)

    # ---- memory ---------------------------------------------------------------------------------

    def reset_memory(self, training: Optional[bool] = None) -> None:
        """Forget the memory of one mode (training or evaluation), or of both."""
        self._memory.reset(training)

    # ---- forward --------------------------------------------------------------------------------

    def forward(self, src_tokens: Tensor, sentence_starts: Optional[Tensor] = None,
                paragraph_starts: Optional[Tensor] = None, features_only: bool = False, need_attn: bool = False,
                incremental_state: Optional[Dict] = None, **kwargs):
        """src_tokens (B, T); sentence_starts / paragraph_starts (B, T) bool,
        True at the first token of a sentence / paragraph (needed only for the
        enabled parts). Returns ((B, T, V) logits or (B, T, d) features, extra);
        with ``need_attn``, ``extra["attn_layers"]`` holds each layer's
        attention probabilities (B, H, T, K), keys = memory then segment, and
        ``extra["attn"]`` the last layer's averaged over heads (B, T, K).

        With ``incremental_state`` (fairseq's ``SequenceGenerator``), see
        ``forward_incremental``."""
        if incremental_state is not None:
            return self.forward_incremental(src_tokens, incremental_state)
        x, weights = self.features_and_attention(src_tokens, sentence_starts, paragraph_starts, need_attn)
        if not features_only:
            x = self.output_layer(x)
        if not need_attn:
            return x, {"attn": [None]}
        return x, {"attn": [weights[-1].mean(dim=1)], "attn_layers": weights}

    def extract_features(self, src_tokens, sentence_starts=None, paragraph_starts=None) -> Tensor:
        """(B, T, d) features of the segment (and the memory updated)."""
        return self.features_and_attention(src_tokens, sentence_starts, paragraph_starts)[0]

    def features_and_attention(self, src_tokens, sentence_starts=None, paragraph_starts=None,
                               need_attn: bool = False):
        """(B, T, d) features and, with ``need_attn``, each layer's attention
        probabilities (B, H, T, K) (else None)."""
        memory = self._memory.current(self.training, src_tokens.size(0))
        stack = self._run_layers(src_tokens, sentence_starts, paragraph_starts, memory, need_attn)
        self._memory.update(self.training, stack.layer_inputs, stack.counters, memory, self.cfg.mem_len)
        return self.dropout(stack.hidden).transpose(0, 1), (stack.attention if need_attn else None)

    def _run_layers(self, src_tokens, sentence_starts, paragraph_starts, memory: Optional[CachedWindow],
                    need_attn: bool) -> LayerStackOutput:
        """The layer stack over one segment after ``memory``, its output (T, B, d) with the final norm applied
        (before dropout)."""
        starts = segment_starts(self.part_dims, sentence_starts, paragraph_starts,
                                "Segatron-XL with a {part} part needs {part}_starts in the input "
                                "(use --task segatron_lm)")
        # outside autocast (--amp): fairseq's AdaptiveInput writes its bands into a float32 tensor
        with torch.autocast(src_tokens.device.type, enabled=False):
            x = self.embed_tokens(src_tokens)
        # (T, B, d), contiguous like every later layer's input: compiled layers see one layout
        x = (x * self.embed_scale).transpose(0, 1).contiguous()
        x = self.dropout(x)
        stack = run_layer_stack(
            self._layers_to_run(x.device), x, starts, memory, self.part_dims, self.cfg.clamp_len,
            self.cfg.segment_distance_origin, self.content_bias, self.position_bias, self.cfg.mem_len,
            self.cfg.same_length, self.dropout, need_attn)
        if self.final_norm is None:
            return stack
        return stack._replace(hidden=self.final_norm(stack.hidden))

    def _layers_to_run(self, device: torch.device):
        """The layers, or with ``compile_layers`` on a GPU their compiled
        wrappers (same parameters; one graph serves every layer, since torch
        passes a module's parameters as graph inputs). The number of runs S
        and the grid size G change from segment to segment: after the first
        change torch compiles those sizes as symbols, once."""
        if not (self.cfg.compile_layers and device.type == "cuda"):
            return self.layers
        if self._compiled_layers is None:
            self._compiled_layers = [torch.compile(layer) for layer in self.layers]
        return self._compiled_layers

    def output_layer(self, features: Tensor) -> Tensor:
        if self.adaptive_softmax is not None:
            return features  # the adaptive softmax is applied by the criterion / get_normalized_probs
        return F.linear(features, self.embed_tokens.weight)

    def max_positions(self):
        return self.cfg.max_target_positions

    # ---- incremental decoding -------------------------------------------------------------------

    def decoding_window(self, tgt_len: int) -> int:
        """The most keys a query sees when decoding a model trained on
        segments of ``tgt_len``: the memory and a segment, or mem_len with
        ``same_length``."""
        return self.cfg.mem_len if self.cfg.same_length else self.cfg.mem_len + tgt_len

    def segment_parts(self) -> List[str]:
        """The enabled segment parts (of ``SEGMENT_LEVELS``; none for Transformer-XL)."""
        return [p for p in SEGMENT_LEVELS if p in self.part_dims]

    def _check_causal(self) -> None:
        if self.segment_parts() and self.cfg.segment_distance_origin == "window_end":
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
        parts = self.segment_parts()
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
        stack = self._run_layers(src_tokens, sentence_starts, paragraph_starts, memory, False)
        inputs, counters = stack.layer_inputs, stack.counters
        if memory is not None:
            inputs = [torch.cat([m, h], dim=0) for m, h in zip(memory.hidden, inputs)]
            counters_window = {p: torch.cat([memory.counters[p], c], dim=1) for p, c in counters.items()}
        else:
            counters_window = counters
        return stack.hidden[-1], self._cache_of(inputs, counters_window, {p: c[:, -1] for p, c in counters.items()})

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
        position_index = cache.position_index(distances)
        for i, layer in enumerate(self.layers):
            bias = i if self.cfg.per_layer_position_biases else 0
            table = cache.position_table(i, layer.attention, self.part_dims, x.dtype, x.device)
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
        parts = self.segment_parts()
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

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of 0.1.0 kept each layer's attention LayerNorm inside the
        attention (``layers.N.attention.layer_norm``); the layer owns it now
        (``layers.N.attention_norm``). Their default was one u, v pair per layer
        (``content_bias`` / ``position_bias`` of L rows); the default is now one
        shared pair, so such a checkpoint turns ``per_layer_position_biases`` on."""
        prefix = f"{name}." if name else ""
        for key in [k for k in state_dict if k.startswith(prefix + "layers.") and ".attention.layer_norm." in k]:
            state_dict[key.replace(".attention.layer_norm.", ".attention_norm.")] = state_dict.pop(key)
        saved = state_dict.get(prefix + "content_bias")
        if saved is not None and saved.size(0) != self.content_bias.size(0):
            if saved.size(0) != len(self.layers):
                raise ValueError(f"{prefix}content_bias has {saved.size(0)} rows: neither one pair nor one per "
                                 f"layer ({len(self.layers)})")
            if isinstance(self.cfg, DictConfig):
                with open_dict(self.cfg):
                    self.cfg.per_layer_position_biases = True
            else:
                self.cfg.per_layer_position_biases = True
            self.content_bias = nn.Parameter(self.content_bias.new_zeros(saved.shape))
            self.position_bias = nn.Parameter(self.position_bias.new_zeros(saved.shape))
        return state_dict


@register_model("segatron_xl", dataclass=SegatronXLConfig)
class SegatronXLModel(FairseqLanguageModel):
    """Segatron-XL language model (Transformer-XL when both segment parts are off)."""

    @classmethod
    def build_model(cls, cfg: SegatronXLConfig, task):
        if cfg.same_length and cfg.mem_len <= 0:
            raise ValueError("--same-length needs a memory: every query sees its last --mem-len positions")
        dictionary = task.target_dictionary
        d = cfg.decoder_embed_dim
        if cfg.adaptive_input:
            if not cfg.adaptive_softmax_cutoff:
                raise ValueError("--adaptive-input needs --adaptive-softmax-cutoff (the same bands)")
            embed_tokens = AdaptiveInput(
                len(dictionary), dictionary.pad(), d, cfg.adaptive_softmax_factor, d,
                utils.eval_str_list(cfg.adaptive_softmax_cutoff, type=int),
            )
        else:
            if cfg.tie_adaptive_weights:
                raise ValueError("--tie-adaptive-weights needs --adaptive-input")
            embed_tokens = nn.Embedding(len(dictionary), d, padding_idx=dictionary.pad())
            nn.init.normal_(embed_tokens.weight, std=d ** -0.5)
        return cls(SegatronXLDecoder(cfg, dictionary, embed_tokens))

    @classmethod
    def embedded_symbols(cls, state_dict: Dict[str, Tensor]) -> Optional[int]:
        """Rows of a checkpoint's token embedding (an adaptive input's bands together), None without one."""
        if "decoder.embed_tokens.weight" in state_dict:
            return state_dict["decoder.embed_tokens.weight"].size(0)
        bands = [value.size(0) for key, value in state_dict.items() if _ADAPTIVE_INPUT_BAND.fullmatch(key)]
        return sum(bands) if bands else None

    def reset_memory(self, training: Optional[bool] = None) -> None:
        self.decoder.reset_memory(training)

    def prepare_generation(self, setup: GenerationSetup) -> None:
        """Ready the decoder for fairseq's ``SequenceGenerator`` (see ``GenerationSetup``)."""
        self.decoder.generation = setup

    def segment_parts(self) -> List[str]:
        """The enabled segment parts, in ``SEGMENT_LEVELS`` order (none for Transformer-XL)."""
        return self.decoder.segment_parts()

    def decoding_window(self, tgt_len: int) -> int:
        """The most keys a query sees when decoding (``SegatronXLDecoder.decoding_window``)."""
        return self.decoder.decoding_window(tgt_len)

    def eos(self) -> int:
        """The dictionary's ``</s>``, which also starts every stream the model reads."""
        return self.decoder.dictionary.eos()

    def never_generated(self) -> List[int]:
        """The symbols a sampler never draws: the dictionary's padding and ``<s>``."""
        return [self.decoder.dictionary.pad(), self.decoder.dictionary.bos()]

    def prime_decoding(self, src_tokens: Tensor, sentence_starts: Optional[Tensor] = None,
                       paragraph_starts: Optional[Tensor] = None) -> Tuple[Tensor, DecodingCache]:
        """``SegatronXLDecoder.prime_decoding``: a prompt (B, T) in one forward -> (B, d) features, the cache."""
        return self.decoder.prime_decoding(src_tokens, sentence_starts, paragraph_starts)

    def decode_step(self, tokens: Tensor, starts: Dict[str, Tensor], cache: DecodingCache) -> Tensor:
        """``SegatronXLDecoder.decode_step``: one new position per row -> (B, d) features."""
        return self.decoder.decode_step(tokens, starts, cache)

    def last_features(self, src_tokens: Tensor, sentence_starts: Optional[Tensor] = None,
                      paragraph_starts: Optional[Tensor] = None) -> Tensor:
        """(B, d) features of each row's last position after a full forward of (B, T) (and the memory updated)."""
        return self.decoder.extract_features(src_tokens, sentence_starts, paragraph_starts)[:, -1]

    def has_adaptive_softmax(self) -> bool:
        """Whether the output is an adaptive softmax's (``--adaptive-softmax-cutoff``), not logits."""
        return self.decoder.adaptive_softmax is not None

    def adaptive_softmax_bands(self, features: Tensor,
                               target: Tensor) -> Tuple[List[Tensor], List[Optional[Tensor]]]:
        """fairseq's ``AdaptiveSoftmax`` on features (B, T, d) and target (B x T,): each band's logits and
        targets (None for a band without targets)."""
        return self.decoder.adaptive_softmax(features, target)

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
                        data_name_or_path: str = ".", **overrides):
        """A ``SegatronXLHubInterface`` (``encode``, ``score``, ``sample``,
        ``generate``, ``attention``) of the checkpoint
        ``model_name_or_path/checkpoint_file``; ``data_name_or_path`` is the
        segatron-preprocess directory it was trained on (relative to the model
        directory when it starts with '.'; ``hub.checkpoints``: the checks and
        errors of every hub)."""
        from segatron_fairseq.hub.segatron_xl import SegatronXLHubInterface  # the hub sits above the models

        return SegatronXLHubInterface.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                                      overrides)


register_presets("segatron_xl", MODEL_PRESETS, SegatronXLConfig)
register_presets("segatron_xl", {name: MODEL_PRESETS[name] for name in ("wt103_base", "tiny")}, SegatronXLConfig,
                 prefix="transformer_xl", fixed=SEGMENT_PARTS["transformer_xl"])
