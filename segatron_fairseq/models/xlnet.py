"""XLNet (Yang et al., 2019) on Segatron-XL's relative attention.

A permutation language model: ``perm_mask`` (B, T, T), True (or 1) where
position i may NOT attend to position j (XLNet's and Hugging Face's meaning),
encodes a sampled factorization order; ``target_mapping`` (B, P, T) one-hot
picks the P predicted positions. Two streams run through the same layers
(``modules/xlnet_layer.py``):

- the content stream h starts from the token embeddings and sees what
  ``perm_mask`` allows plus itself;
- the query stream g starts from the learned vector ``mask_emb`` at each of
  the P predicted positions and sees what ``perm_mask`` allows (not its own
  token); it runs on the P rows only (its queries take their targets' rows
  for the scores); its last layer gives the logits (tied embeddings, with a
  bias).

Both attend to the memory (each layer's cached content inputs, always
visible) and the whole segment, with bidirectional relative distances:
``--positions token`` the token distance i - j (XLNet), ``--positions
segatron`` token, sentence and paragraph distances (Segatron Eq. 3, or with
``--segment-distance-origin window_end`` the authors' variant), from the
running counters of sentence / paragraph starts, which the memory caches with
the states. XLNet's relative segment term adds (q_i + b_s) . s+ or s- (same
segment or not; the memory counts as segment 0, as in XLNet).

The memory caches the content stream's inputs at the first ``reuse_len``
positions of each segment (XLNet's reuse part, which the data keeps from
seeing the rest), with their counters; the next segment continues there.
Without ``target_mapping`` only the content stream runs and the logits are
those of every position (B, T, V).

Fine-tuning (the GLUE, SQuAD, RACE and NER tasks) runs the content stream
alone, without memory, over an encoder input laid out as SegaBERT's
(``<s> a </s> b </s>``, ``segments.layout``): padding is hidden from every
query, the token types are XLNet's segment ids, and with ``--positions
segatron`` the sentence and paragraph starts come from the indexes
(``modules.index_boundaries``). The heads read the first token (``<s>``, as
our other encoders; XLNet's own code puts its ``<cls>`` last and reads that).
"""
import logging
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional

import torch
import torch.nn.functional as F
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import BaseFairseqModel, register_model
from fairseq.models.roberta.model import RobertaClassificationHead
from torch import Tensor, nn

from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.presets import register_presets
from segatron_fairseq.models.task_heads import TaskHeads
from segatron_fairseq.models.vocabulary_rows import append_vocabulary_rows, appended_symbols
from segatron_fairseq.modules import ORIGINS, RelativeSegments, XLNetLayer, segment_part_dims
from segatron_fairseq.modules.index_boundaries import index_boundaries
from segatron_fairseq.modules.segatron_xl_stack import segment_starts, window_distances
from segatron_fairseq.modules.segment_memory import CachedWindow, SegmentMemory

logger = logging.getLogger(__name__)

POSITIONS = ("token", "segatron")
# what a checkpoint's relative positions were trained as (its buffer ``relative_positions``)
POSITION_KINDS = ("token", "segatron, query", "segatron, window_end")

# XLNet's sizes (paper Sec. 3.1; base 12 x 768, large 24 x 1024) and a tiny one for tests
XLNET_PRESETS = {
    "base": dict(encoder_layers=12, encoder_embed_dim=768, encoder_attention_heads=12, encoder_head_dim=64,
                 encoder_ffn_embed_dim=3072),
    "large": dict(encoder_layers=24, encoder_embed_dim=1024, encoder_attention_heads=16, encoder_head_dim=64,
                  encoder_ffn_embed_dim=4096),
    "tiny": dict(encoder_layers=2, encoder_embed_dim=48, encoder_attention_heads=4, encoder_head_dim=12,
                 encoder_ffn_embed_dim=96, mem_len=16),
}


class XLNetStreams(NamedTuple):
    """What ``XLNetModel._streams`` returns."""

    content: Tensor  # (B, T, d) the content stream's last layer (after dropout)
    query: Optional[Tensor]  # (B, P, d) the query stream's at the targets, or None without target_mapping
    layer_inputs: List[Tensor]  # each layer's content input (T, B, d): what the memory caches
    counters: Dict[str, Tensor]  # the segment's counters (B, T) per part
    attention: List[tuple]  # each layer's (content (B, H, T, K), query (B, H, P, K)) probabilities, or Nones


@dataclass
class XLNetConfig(FairseqDataclass):
    # defaults: xlnet_base
    encoder_layers: int = field(default=12, metadata={"help": "number of layers"})
    encoder_embed_dim: int = field(default=768, metadata={"help": "model width d"})
    encoder_attention_heads: int = field(default=12, metadata={"help": "attention heads"})
    encoder_head_dim: int = field(default=64, metadata={"help": "width of one head"})
    encoder_ffn_embed_dim: int = field(default=3072, metadata={"help": "feed-forward inner width"})
    dropout: float = field(default=0.1, metadata={"help": "dropout"})
    attention_dropout: float = field(default=0.1, metadata={"help": "dropout on attention probabilities"})
    mem_len: int = field(default=384, metadata={"help": "memory kept, in tokens (0: none)"})
    clamp_len: int = field(default=-1, metadata={"help": "clamp token distances to +-this (-1: no clamp)"})
    positions: ChoiceEnum(POSITIONS) = field(
        default="token", metadata={"help": "token: XLNet's token distances; segatron: token, sentence and "
                                           "paragraph distances (Segatron Eq. 3), both of both signs"})
    segment_distance_origin: ChoiceEnum(ORIGINS) = field(
        default="query", metadata={"help": "with --positions segatron: query: s_i - s_j, p_i - p_j (Eq. 3); "
                                           "window_end: the authors' Segatron-XL distances, counted from the "
                                           "window's last key (and, for keys after the query, its first)"})
    tie_position_biases: bool = field(
        default=False, metadata={"help": "one set of r_w / r_r / r_s biases for all layers (default: one per "
                                         "layer, XLNet's untie_r as in its pre-training)"})
    init_std: float = field(default=0.02, metadata={"help": "std of the normal init of weights"})


@register_model("xlnet", dataclass=XLNetConfig)
class XLNetModel(EncoderInterface, BaseFairseqModel):
    """XLNet's permutation language model with relative positions of ``--positions``;
    every head (classification and task heads) in ``classification_heads``, a ``TaskHeads``."""

    WORD_TABLE_KEY = "embed_tokens.weight"

    def __init__(self, cfg: XLNetConfig, dictionary):
        super().__init__()
        self.cfg = cfg
        d, layers, heads, head_dim = (cfg.encoder_embed_dim, cfg.encoder_layers, cfg.encoder_attention_heads,
                                      cfg.encoder_head_dim)
        segatron = cfg.positions == "segatron"
        self.part_dims = segment_part_dims(d, segatron, segatron)
        self.padding_idx = dictionary.pad()
        self.embed_tokens = nn.Embedding(len(dictionary), d, padding_idx=dictionary.pad())
        self.mask_emb = nn.Parameter(torch.zeros(1, 1, d))
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(
            XLNetLayer(d, heads, head_dim, cfg.encoder_ffn_embed_dim, self.part_dims, cfg.dropout,
                       cfg.attention_dropout)
            for _ in range(layers)
        )
        bias_sets = 1 if cfg.tie_position_biases else layers
        self.content_bias = nn.Parameter(torch.zeros(bias_sets, heads, head_dim))   # XLNet's r_w_bias
        self.position_bias = nn.Parameter(torch.zeros(bias_sets, heads, head_dim))  # r_r_bias
        self.segment_bias = nn.Parameter(torch.zeros(bias_sets, heads, head_dim))   # r_s_bias
        self.segment_embed = nn.Parameter(torch.zeros(layers, 2, heads, head_dim))  # seg_embed: s+, s-
        self.output_bias = nn.Parameter(torch.zeros(len(dictionary)))  # the tied LM head's bias
        self.register_buffer("relative_positions", torch.tensor(self.position_kind()))
        self.appended = appended_symbols(dictionary)  # fine-tuning symbols after the pre-training ones
        self.classification_heads = TaskHeads()
        self._memory = SegmentMemory("XLNet")
        self._init_weights()

    def position_kind(self) -> int:
        """This model's index in ``POSITION_KINDS``."""
        if self.cfg.positions == "token":
            return 0
        return 1 + ORIGINS.index(self.cfg.segment_distance_origin)

    @classmethod
    def build_model(cls, cfg: XLNetConfig, task):
        return cls(cfg, task.target_dictionary)

    def _init_weights(self):
        std = self.cfg.init_std
        for module in self.layers.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for weight in (self.embed_tokens.weight, self.mask_emb, self.content_bias, self.position_bias,
                       self.segment_bias, self.segment_embed):
            nn.init.normal_(weight, std=std)

    # ---- memory ---------------------------------------------------------------------------------

    def reset_memory(self, training: Optional[bool] = None) -> None:
        """Forget the memory of one mode (training or evaluation), or of both."""
        self._memory.reset(training)

    # ---- forward --------------------------------------------------------------------------------

    def forward(self, src_tokens: Tensor, perm_mask: Optional[Tensor] = None,
                target_mapping: Optional[Tensor] = None, segment_ids: Optional[Tensor] = None,
                sentence_starts: Optional[Tensor] = None, paragraph_starts: Optional[Tensor] = None,
                reuse_len: Optional[int] = None, features_only: bool = False, need_attn: bool = False,
                classification_head_name: Optional[str] = None, **encoder_input):
        """src_tokens (B, T); perm_mask (B, T, T) (None: everything visible);
        target_mapping (B, P, T) one-hot (None: no query stream); segment_ids
        (B, T) (None: one segment); sentence_starts / paragraph_starts (B, T)
        bool (with ``--positions segatron``); reuse_len: positions cached as
        memory (None: all). Returns ((B, P, V) logits of the query stream at
        the targets, or without ``target_mapping`` (B, T, V) of the content
        stream; features (B, ., d) with ``features_only``) and extra:
        ``content`` (B, T, d) the content stream's output, and with
        ``need_attn`` ``attn_layers``: each layer's (content, query)
        probabilities (B, H, T, K) and (B, H, P, K).

        With ``classification_head_name``: the fine-tuning tasks' call, an
        encoder input (``encoder_input``: ``paragraph_index``,
        ``sentence_index``, ``token_index``, ``token_type``, each (B, T));
        returns that head's output on ``token_features`` and an empty dict."""
        if classification_head_name is not None:
            features = self.token_features(src_tokens, **encoder_input)
            return self.classification_heads[classification_head_name](features), {}
        batch = src_tokens.size(0)
        memory = self._memory.current(self.training, batch)
        starts = {"sentence": sentence_starts, "paragraph": paragraph_starts}
        streams = self._streams(src_tokens, perm_mask, target_mapping, segment_ids, starts, memory, need_attn)
        # the first reuse_len positions are cached (XLNet's reuse part)
        self._memory.update(self.training, streams.layer_inputs, streams.counters, memory, self.cfg.mem_len,
                            reuse_len)
        x = streams.content if streams.query is None else streams.query
        if not features_only:
            x = self.output_layer(x)
        extra = {"content": streams.content}
        if need_attn:
            extra["attn_layers"] = streams.attention
        return x, extra

    def token_features(self, src_tokens: Tensor, paragraph_index: Optional[Tensor] = None,
                       sentence_index: Optional[Tensor] = None, token_index: Optional[Tensor] = None,
                       token_type: Optional[Tensor] = None, **unused) -> Tensor:
        """(B, T, d) the content stream's last layer over a right-padded
        encoder input (what the fine-tuning heads read), without memory:
        padding is hidden from every query; ``token_type`` (B, T) gives the
        segment ids (None: one segment); with ``--positions segatron`` the
        (B, T) indexes give the sentence and paragraph starts.

        With ``--segment-distance-origin window_end`` the distances count from
        the window's ends, so the rows of each length run apart, unpadded (the
        window is the example); their padding gets zeros."""
        padding = src_tokens.eq(self.padding_idx)
        starts = {"sentence": None, "paragraph": None}
        if self.cfg.positions == "segatron":
            indexes = {"paragraph": paragraph_index, "sentence": sentence_index, "token": token_index}
            missing = [f"{level}_index" for level, index in indexes.items() if index is None]
            if missing:
                raise ValueError(f"XLNet with --positions segatron needs {', '.join(missing)} next to src_tokens "
                                 "to fine-tune (use a task that lays out the segment indexes)")
            boundaries = index_boundaries(indexes, padding)
            starts = {"sentence": boundaries.sentence_start, "paragraph": boundaries.paragraph_start}
            if self.cfg.segment_distance_origin == "window_end" and bool(padding.any()):
                return self._features_by_length(src_tokens, token_type, starts, padding)
        hidden_keys = padding[:, None, :].expand(-1, src_tokens.size(1), -1)
        return self._streams(src_tokens, hidden_keys, None, token_type, starts, None, False).content

    def _features_by_length(self, src_tokens: Tensor, token_type: Optional[Tensor], starts: Dict[str, Tensor],
                            padding: Tensor) -> Tensor:
        """``token_features`` of the rows of each real length L apart, over
        their first L positions (B, T, d; zeros at padding)."""
        lengths = (~padding).sum(dim=1)
        features = None
        for length in lengths.unique().tolist():
            rows = (lengths == length).nonzero().squeeze(1)
            part = self._streams(src_tokens[rows, :length], None, None,
                                 None if token_type is None else token_type[rows, :length],
                                 {level: flags[rows, :length] for level, flags in starts.items()}, None,
                                 False).content
            if features is None:
                features = part.new_zeros(*src_tokens.shape, part.size(-1))
            features[rows, :length] = part
        return features

    @property
    def token_feature_dim(self) -> int:
        return self.cfg.encoder_embed_dim

    def _streams(self, src_tokens: Tensor, perm_mask: Optional[Tensor], target_mapping: Optional[Tensor],
                 segment_ids: Optional[Tensor], starts: Dict[str, Optional[Tensor]],
                 memory: Optional[CachedWindow], need_attn: bool) -> XLNetStreams:
        """Both streams through the layers after ``memory`` (see ``XLNetStreams``)."""
        batch, seq_len = src_tokens.shape
        mem_len = 0 if memory is None else memory.hidden[0].size(0)
        counters = SegmentMemory.counters(
            segment_starts(self.part_dims, starts["sentence"], starts["paragraph"],
                           "XLNet with --positions segatron needs {part}_starts in the input (use --task xlnet_plm)"),
            memory)
        content = self.dropout(self.embed_tokens(src_tokens).transpose(0, 1))
        query = None
        if target_mapping is not None:
            # the query stream runs at the P targets only (P, B, d)
            query = self.dropout(self.mask_emb.to(content.dtype).expand(target_mapping.size(1), batch, -1))
        distances = window_distances(self.part_dims, counters, memory, seq_len, self.cfg.clamp_len,
                                     self.cfg.segment_distance_origin, content.dtype, content.device, self.dropout,
                                     bidirectional=True)
        content_mask, query_mask = self.attention_masks(perm_mask, batch, seq_len, mem_len, src_tokens.device)
        different = self._different_segments(segment_ids, batch, seq_len, mem_len, src_tokens.device)

        inputs, weights = [], []
        for i, layer in enumerate(self.layers):
            inputs.append(content)
            bias = 0 if self.cfg.tie_position_biases else i
            segments = RelativeSegments(different, self.segment_embed[i], self.segment_bias[bias])
            layer_out = layer(content, query, None if memory is None else memory.hidden[i], distances,
                              self.content_bias[bias], self.position_bias[bias], segments, content_mask, query_mask,
                              target_mapping, need_attn)
            content, query = layer_out.content, layer_out.query
            weights.append(layer_out.weights)
        return XLNetStreams(self.dropout(content).transpose(0, 1),
                            None if query is None else self.dropout(query).transpose(0, 1), inputs, counters, weights)

    def output_layer(self, features: Tensor) -> Tensor:
        """The tied LM head: features (..., d) -> logits (..., V)."""
        return F.linear(features, self.embed_tokens.weight, self.output_bias)

    @staticmethod
    def attention_masks(perm_mask: Optional[Tensor], batch: int, seq_len: int, mem_len: int,
                        device: torch.device):
        """(B, T, M + T) masks of the content and the query stream, True where
        the key is hidden: the memory is visible; the segment's keys as
        ``perm_mask`` says, except that the content stream always sees its own
        position."""
        if perm_mask is None:
            perm_mask = torch.zeros(batch, seq_len, seq_len, dtype=torch.bool, device=device)
        hidden = perm_mask.bool()
        if mem_len:
            hidden = torch.cat([hidden.new_zeros(batch, seq_len, mem_len), hidden], dim=2)
        itself = torch.eye(seq_len, dtype=torch.bool, device=device)
        content = hidden.clone()
        content[:, :, mem_len:] &= ~itself
        return content, hidden

    @staticmethod
    def _different_segments(segment_ids: Optional[Tensor], batch: int, seq_len: int, mem_len: int,
                            device: torch.device) -> Tensor:
        """(B, T, M + T) True where query i and key j are in different segments (the memory: segment 0)."""
        if segment_ids is None:
            segment_ids = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
        keys = torch.cat([segment_ids.new_zeros(batch, mem_len), segment_ids], dim=1)
        return segment_ids[:, :, None] != keys[:, None, :]

    def max_positions(self):
        return None

    # ---- fine-tuning ----------------------------------------------------------------------------

    def register_classification_head(self, name: str, num_classes: int, **unused) -> None:
        """A sentence (or option) classifier ``name``: the first token's
        features, dropout, a d x d layer, tanh, dropout, a d x C layer (XLNet's
        sequence summary and projection, on the first token instead of the
        last; fairseq's ``RobertaClassificationHead``)."""
        d = self.cfg.encoder_embed_dim
        self.classification_heads[name] = RobertaClassificationHead(d, d, num_classes, "tanh", self.cfg.dropout)

    def task_head_container(self) -> TaskHeads:
        return self.classification_heads

    def word_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def vocabulary_tables(self) -> Dict[str, Tensor]:
        return {"embed_tokens.weight": self.embed_tokens.weight, "output_bias": self.output_bias}

    def upgrade_state_dict_named(self, state_dict, name):
        """A checkpoint trained with other relative positions than this
        model's is refused (the weights would load: only the split of R
        differs); one from before ``relative_positions`` was saved is taken as
        this model's. A pre-training checkpoint loads into a fine-tuning model
        (``models.vocabulary_rows``: the rows of ``<mask>``; ``TaskHeads.restore``: the heads)."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        key = prefix + "relative_positions"
        if key not in state_dict:
            state_dict[key] = self.relative_positions.clone()
        elif int(state_dict[key]) != int(self.relative_positions):
            trained, ours = POSITION_KINDS[int(state_dict[key])], POSITION_KINDS[int(self.relative_positions)]
            raise ValueError(f"an XLNet checkpoint trained with relative positions {trained!r} "
                             f"(--positions, --segment-distance-origin); this model has {ours!r}: give the "
                             f"checkpoint's")
        append_vocabulary_rows(state_dict, prefix, self.vocabulary_tables(), self.appended, "xlnet")
        self.classification_heads.restore(state_dict, prefix + "classification_heads.")


register_presets("xlnet", XLNET_PRESETS, XLNetConfig)
