"""The cloze-driven two-tower model (Baevski et al., 2019): a forward
(left-to-right) and a backward (right-to-left) tower of pre-LN Transformer
blocks over shared input embeddings, combined by one attention block that
predicts every token from all its left and right context but never from the
token itself (``modules.cloze_combination``).

- Input: token embeddings scaled by sqrt(d) plus fixed sinusoidal positions
  (``--token-positions absolute``; ``sentence``, our variant: the token's
  index within its sentence instead), plus, with ``--segment-positions``,
  learned paragraph- and sentence-index embeddings as in SegaBERT; then dropout.
  The forward tower reads the indexes as given (counted from the block's
  start), the backward tower their mirror image
  (``modules.backward_tower_indexes``), so neither learns from them where
  the token it helps predict ends a sentence.
- Towers: fairseq's decoder layers (pre-LN, ReLU FFN, no cross-attention),
  each attention with the extra zero key/value slot; no final LayerNorm.
- Combination: mask ``full`` (pre-training) or ``none`` (fine-tuning:
  every state is seen, the token's own included).
- Output: the input embedding matrix (tied), or, with
  ``--adaptive-softmax-cutoff``, fairseq's ``AdaptiveSoftmax`` (the paper's
  word models: a 60K head at d, a 160K band at d / 4, the rest at d / 16).
- ``--input-embedder char-cnn`` (the paper's word models): fairseq's
  ``CharacterTokenEmbedder`` with the paper's filters and 2 highway layers in
  place of the token table; it needs the adaptive softmax (nothing to tie to).

Padding is on the right for both towers: the forward tower never looks
right, and the backward tower and the combination mask padded keys, so an
example gives the same outputs alone or batched with longer ones.

``forward`` returns features (B, T, d) by name: ``cloze`` (the combination's
output, predicting token i at position i), ``forward`` (the forward tower's
top states, predicting token i + 1) and ``backward`` (predicting token i - 1);
``log_probs`` scores features against targets.

Fine-tuning (the paper's): every head reads the combination's output with
nothing masked (``token_features``), whatever ``--combination-mask`` says
(that option is the language model's own). ``ClozeClassificationHead``
(GLUE): the outputs at the two boundary ``<s>`` (and at ``<sep>`` for pairs)
concatenated, scaled by 16, dropout, a linear layer initialised to zero;
``register_task_head`` takes the token-labelling heads. A pre-trained
checkpoint loads into a model whose dictionary has the fine-tuning symbols
appended (``<sep>``, ``<mask>``): their rows come from the model's own
initialisation (``models.vocabulary_rows``).
"""
import logging
import math
from dataclasses import dataclass, field
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import BaseFairseqModel, register_model
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import AdaptiveSoftmax, CharacterTokenEmbedder, FairseqDropout, SinusoidalPositionalEmbedding
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from torch import nn

from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.presets import register_presets
from segatron_fairseq.models.task_heads import TaskHeads
from segatron_fairseq.models.vocabulary_rows import append_vocabulary_rows, appended_symbols
from segatron_fairseq.modules import add_index_embeddings
from segatron_fairseq.modules.backward_tower_indexes import backward_tower_indexes
from segatron_fairseq.modules.cloze_combination import (
    COMBINATION_MASKS,
    QUERY_COMBINATIONS,
    ClozeCombination,
    backward_tower_mask,
    forward_tower_mask,
)
from segatron_fairseq.segments import SEP_SYMBOL, TABLE_SIZES

logger = logging.getLogger(__name__)

TOKEN_POSITIONS = ("absolute", "sentence")
INPUT_EMBEDDERS = ("token", "char-cnn")
# the paper's character CNN: (width, channels) of each filter, 2 highway layers
CHAR_FILTERS = "[(1, 64), (2, 128), (3, 192), (4, 256), (5, 256), (6, 256), (7, 256)]"
# the paper's adaptive softmax bands: 60K types at d, the next 160K at d / 4 (factor 4), the rest at d / 16
PAPER_ADAPTIVE_CUTOFF = "60000,220000"
SEGMENT_LEVELS_EMBEDDED = ("paragraph", "sentence")  # --segment-positions: the index tables added
# 2: the backward tower reads the indexes counted from the right (1, before it: the forward tower's, which tell
# the query for token i whether token i ends a sentence)
INDEX_LAYOUT_VERSION = 2
LM_OUTPUT_SCALE = 16.0  # the paper's GLUE head: the language model's output x16 (a larger step for the head)

# the paper's sizes (its Table 1; layers are per tower): base 6 blocks, large 12 (the BPE model's), d 1024,
# FFN 4096, 16 heads; the query of the combination summed for base, concatenated for large
PRESETS = {
    "base": dict(decoder_layers=6, decoder_embed_dim=1024, decoder_ffn_embed_dim=4096, decoder_attention_heads=16,
                 combine_query="sum"),
    "large": dict(decoder_layers=12, decoder_embed_dim=1024, decoder_ffn_embed_dim=4096,
                  decoder_attention_heads=16, combine_query="concat"),
    "tiny": dict(decoder_layers=2, decoder_embed_dim=64, decoder_ffn_embed_dim=128, decoder_attention_heads=4,
                 combine_query="sum"),
}
_BASE = PRESETS["base"]


@dataclass
class ClozeTwoTowerConfig(FairseqDataclass):
    # defaults: the paper's base model
    decoder_layers: int = field(default=_BASE["decoder_layers"], metadata={"help": "blocks per tower"})
    decoder_embed_dim: int = field(default=_BASE["decoder_embed_dim"], metadata={"help": "model width d"})
    decoder_ffn_embed_dim: int = field(default=_BASE["decoder_ffn_embed_dim"],
                                       metadata={"help": "feed-forward inner width"})
    decoder_attention_heads: int = field(default=_BASE["decoder_attention_heads"],
                                         metadata={"help": "attention heads"})
    dropout: float = field(default=0.1, metadata={"help": "dropout"})
    attention_dropout: float = field(default=0.1, metadata={"help": "dropout on attention probabilities"})
    activation_dropout: float = field(default=0.05, metadata={"help": "dropout after the FFN's ReLU"})
    combination_mask: ChoiceEnum(COMBINATION_MASKS) = field(default="full", metadata={
        "help": "full: query i sees F_<i and B_>i only (pre-training); none: every state (fine-tuning)"})
    combine_query: ChoiceEnum(QUERY_COMBINATIONS) = field(default=_BASE["combine_query"], metadata={
        "help": "the combination's query from F_i-1 and B_i+1: their sum (base) or their concatenation "
                "projected to d (large)"})
    segment_positions: bool = field(default=False, metadata={
        "help": "add learned paragraph- and sentence-index embeddings (SegaBERT's) to both towers' input; the "
                "backward tower's counted from the block's end (docs/cloze-two-tower.md)"})
    max_paragraph_index: int = field(default=TABLE_SIZES["paragraph"],
                                     metadata={"help": "paragraph index table size"})
    max_sentence_index: int = field(default=TABLE_SIZES["sentence"], metadata={"help": "sentence index table size"})
    token_positions: ChoiceEnum(TOKEN_POSITIONS) = field(default="absolute", metadata={
        "help": "absolute: sinusoids of the position in the block (the paper); sentence: of the token's index "
                "in its sentence (our variant; the backward tower's counted from the sentence's end)"})
    input_embedder: ChoiceEnum(INPUT_EMBEDDERS) = field(default="token", metadata={
        "help": "token: a table of the dictionary's types (BPE models); char-cnn: the paper's character CNN "
                "over each word (word models; needs --adaptive-softmax-cutoff)"})
    char_filters: str = field(default=CHAR_FILTERS, metadata={"help": "char-cnn: (width, channels) of each filter"})
    char_embed_dim: int = field(default=128, metadata={"help": "char-cnn: character embedding width"})
    char_highway_layers: int = field(default=2, metadata={"help": "char-cnn: highway layers"})
    max_char_len: int = field(default=50, metadata={"help": "char-cnn: characters read of each word"})
    adaptive_softmax_cutoff: Optional[str] = field(default=None, metadata={
        "help": f"comma separated band ends of fairseq's adaptive softmax (the paper's word models: "
                f"{PAPER_ADAPTIVE_CUTOFF}); default: a full softmax tied to the input embeddings"})
    adaptive_softmax_factor: float = field(default=4.0, metadata={"help": "each band's width is the previous one's "
                                                                          "divided by this"})
    adaptive_softmax_dropout: float = field(default=0.0, metadata={"help": "dropout in the adaptive softmax's bands"})
    max_target_positions: int = field(default=512, metadata={"help": "longest input"})
    classifier_dropout: float = field(default=0.1, metadata={
        "help": "fine-tuning: dropout before the classification head's projection (the paper's 0.1)"})


class ClozeTwoTower(nn.Module):
    """Embeddings, the two towers, the combination block and the tied output."""

    def __init__(self, cfg: ClozeTwoTowerConfig, dictionary: Dictionary):
        super().__init__()
        d = cfg.decoder_embed_dim
        self.padding_idx = padding_idx = dictionary.pad()
        self.combination_mask = cfg.combination_mask
        self.token_positions = cfg.token_positions
        self.reads_indexes = cfg.segment_positions or cfg.token_positions == "sentence"
        self.register_buffer("index_layout_version", torch.tensor(INDEX_LAYOUT_VERSION))
        self.register_buffer("sentence_token_positions", torch.tensor(cfg.token_positions == "sentence"))
        if cfg.input_embedder == "char-cnn":
            if not cfg.adaptive_softmax_cutoff:
                raise ValueError("--input-embedder char-cnn needs --adaptive-softmax-cutoff: the output layer "
                                 "cannot be tied to a character CNN")
            self.embed_tokens = CharacterTokenEmbedder(dictionary, utils.eval_str_list(cfg.char_filters, type=tuple),
                                                       cfg.char_embed_dim, d, cfg.char_highway_layers,
                                                       cfg.max_char_len)
        else:
            self.embed_tokens = nn.Embedding(len(dictionary), d, padding_idx=padding_idx)
            nn.init.normal_(self.embed_tokens.weight, std=d ** -0.5)
            nn.init.zeros_(self.embed_tokens.weight[padding_idx])
        self.adaptive_softmax = None
        if cfg.adaptive_softmax_cutoff:
            cutoff = utils.eval_str_list(cfg.adaptive_softmax_cutoff, type=int)
            if not all(a < b for a, b in zip([0] + cutoff, cutoff)) or cutoff[-1] >= len(dictionary):
                raise ValueError(f"--adaptive-softmax-cutoff {cfg.adaptive_softmax_cutoff}: band ends must rise "
                                 f"and stay below the dictionary's {len(dictionary)} types")
            self.adaptive_softmax = AdaptiveSoftmax(len(dictionary), d, cutoff, cfg.adaptive_softmax_dropout,
                                                    factor=cfg.adaptive_softmax_factor)
        self.embed_scale = math.sqrt(d)
        self.embed_positions = SinusoidalPositionalEmbedding(d, padding_idx, cfg.max_target_positions + padding_idx + 1)
        self.segment_embeddings = nn.ModuleDict()
        if cfg.segment_positions:
            for level in SEGMENT_LEVELS_EMBEDDED:
                table = nn.Embedding(getattr(cfg, f"max_{level}_index"), d)
                nn.init.normal_(table.weight, std=0.02)
                self.segment_embeddings[level] = table
        self.dropout = FairseqDropout(cfg.dropout, module_name=type(self).__name__)
        layer_cfg = TransformerConfig(dropout=cfg.dropout, attention_dropout=cfg.attention_dropout,
                                      activation_dropout=cfg.activation_dropout, activation_fn="relu")
        layer_cfg.decoder.embed_dim = d
        layer_cfg.decoder.ffn_embed_dim = cfg.decoder_ffn_embed_dim
        layer_cfg.decoder.attention_heads = cfg.decoder_attention_heads
        layer_cfg.decoder.normalize_before = True

        def tower():
            return nn.ModuleList(TransformerDecoderLayerBase(layer_cfg, no_encoder_attn=True, add_zero_attn=True)
                                 for _ in range(cfg.decoder_layers))

        self.forward_layers, self.backward_layers = tower(), tower()
        self.combination = ClozeCombination(d, cfg.decoder_ffn_embed_dim, cfg.decoder_attention_heads, cfg.dropout,
                                            cfg.attention_dropout, cfg.activation_dropout, cfg.combine_query)

    def _sinusoids(self, positions: torch.Tensor) -> torch.Tensor:
        """(B, T) fairseq positions (padding_idx at padding) -> (B, T, d)."""
        table = self.embed_positions
        needed = int(positions.max()) + 1 if positions.numel() else 0
        if needed > table.weights.size(0):
            table.weights = SinusoidalPositionalEmbedding.get_embedding(needed, table.embedding_dim,
                                                                        table.padding_idx)
        table.weights = table.weights.to(table._float_tensor)
        return table.weights.index_select(0, positions.reshape(-1)).view(*positions.shape, -1).detach()

    def embed(self, src_tokens: torch.Tensor, paragraph_index=None, sentence_index=None,
              token_index=None) -> torch.Tensor:
        """(B, T) ids and indexes -> (B, T, d) the forward tower's input (before dropout)."""
        indexes = {"paragraph": paragraph_index, "sentence": sentence_index, "token": token_index}
        return self._add_positions(self.embed_scale * self.embed_tokens(src_tokens), src_tokens, indexes)

    def tower_inputs(self, src_tokens: torch.Tensor, paragraph_index=None, sentence_index=None,
                     token_index=None):
        """(B, T) ids and indexes -> the forward and the backward tower's input,
        (B, T, d) each, before dropout: one tensor when the model reads no index."""
        indexes = {"paragraph": paragraph_index, "sentence": sentence_index, "token": token_index}
        tokens = self.embed_scale * self.embed_tokens(src_tokens)
        forward = self._add_positions(tokens, src_tokens, indexes)
        if not self.reads_indexes:
            return forward, forward
        for name, index in indexes.items():
            if index is None:
                raise ValueError(f"{name}_index is needed next to src_tokens: the backward tower counts the "
                                 f"indexes from the right (--segment-positions, --token-positions sentence)")
        limits = {name: table.num_embeddings - 1 for name, table in self.segment_embeddings.items()}
        backward = backward_tower_indexes(indexes, src_tokens.eq(self.padding_idx), limits)
        return forward, self._add_positions(tokens, src_tokens, backward)

    def _add_positions(self, tokens: torch.Tensor, src_tokens: torch.Tensor, indexes) -> torch.Tensor:
        """(B, T, d) scaled token embeddings plus the sinusoids and index tables of ``indexes`` (level -> (B, T))."""
        padding = src_tokens.eq(self.padding_idx)
        if self.token_positions == "sentence":
            if indexes["token"] is None:
                raise ValueError("--token-positions sentence needs token_index next to src_tokens")
            positions = (indexes["token"] + self.padding_idx + 1).masked_fill(padding, self.padding_idx)
        else:
            positions = utils.make_positions(src_tokens, self.padding_idx)
        x = tokens + self._sinusoids(positions)
        return add_index_embeddings(x, self.segment_embeddings, indexes,
                                    "--segment-positions needs {name}_index next to src_tokens")

    def towers(self, src_tokens: torch.Tensor, **indexes):
        """The towers' top states, (T, B, d) each, and the padding mask (B, T) or None."""
        padding = src_tokens.eq(self.padding_idx)
        padding = padding if padding.any() else None
        forward_input, backward_input = self.tower_inputs(src_tokens, **indexes)
        x = self.dropout(forward_input).transpose(0, 1)
        y = x if backward_input is forward_input else self.dropout(backward_input).transpose(0, 1)
        length = x.size(0)
        fwd = self._tower(self.forward_layers, x, forward_tower_mask(length, x.device), padding)
        bwd = self._tower(self.backward_layers, y, backward_tower_mask(length, x.device), padding)
        return fwd, bwd, padding

    def upgrade_state_dict_named(self, state_dict, name):
        """A checkpoint without ``index_layout_version`` predates version 2: one
        that reads no index loads as it is; one that does is refused (its
        backward tower was trained on the forward tower's indexes). A version
        this code does not know is refused, and so is a checkpoint whose
        ``--token-positions`` differs from this model's (the weights would
        load, the sinusoids would not be those it learned with)."""
        prefix = f"{name}." if name else ""
        key = prefix + "index_layout_version"
        if key in state_dict:
            if int(state_dict[key]) != INDEX_LAYOUT_VERSION:
                raise ValueError(f"a cloze_two_tower checkpoint of index layout {int(state_dict[key])}; this code "
                                 f"reads layout {INDEX_LAYOUT_VERSION}")
        elif self.reads_indexes:
            raise ValueError("a cloze_two_tower checkpoint with --segment-positions or --token-positions sentence "
                             "from before index layout 2: its backward tower read the forward tower's indexes, "
                             "which tell it whether the predicted token ends a sentence; train it again")
        else:
            state_dict[key] = self.index_layout_version.clone()
        key = prefix + "sentence_token_positions"
        if key not in state_dict:  # a checkpoint from before the flag: taken as this model's
            state_dict[key] = self.sentence_token_positions.clone()
        elif bool(state_dict[key]) != bool(self.sentence_token_positions):
            trained = "sentence" if bool(state_dict[key]) else "absolute"
            raise ValueError(f"a cloze_two_tower checkpoint trained with --token-positions {trained}; this model "
                             f"has --token-positions {self.token_positions}: give the checkpoint's")

    @staticmethod
    def _tower(layers: nn.ModuleList, x: torch.Tensor, mask: torch.Tensor, padding: Optional[torch.Tensor]):
        for layer in layers:
            x, _, _ = layer(x, self_attn_mask=mask, self_attn_padding_mask=padding)
        return x

    def forward(self, src_tokens: torch.Tensor, paragraph_index=None, sentence_index=None, token_index=None,
                cloze: bool = True, bilm: bool = False) -> Dict[str, torch.Tensor]:
        """Features (B, T, d): ``cloze`` when asked, ``forward`` and ``backward``
        (the towers' states) when ``bilm``."""
        fwd, bwd, padding = self.towers(src_tokens, paragraph_index=paragraph_index,
                                        sentence_index=sentence_index, token_index=token_index)
        features = {}
        if cloze:
            features["cloze"] = self.combination(fwd, bwd, padding, self.combination_mask).transpose(0, 1)
        if bilm:
            features["forward"], features["backward"] = fwd.transpose(0, 1), bwd.transpose(0, 1)
        return features

    def unmasked_cloze(self, src_tokens: torch.Tensor, **indexes) -> torch.Tensor:
        """(B, T, d) the combination's output with nothing masked (fine-tuning:
        every state is seen, the token's own included)."""
        fwd, bwd, padding = self.towers(src_tokens, **indexes)
        return self.combination(fwd, bwd, padding, "none").transpose(0, 1)

    def log_probs(self, features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """(B, T, d) features, (B, T) targets -> (B, T) log-probability of each
        target (float32)."""
        if self.adaptive_softmax is not None:
            return adaptive_target_log_probs(self.adaptive_softmax, features, target)
        lprobs = F.log_softmax(F.linear(features, self.embed_tokens.weight).float(), dim=-1)
        return lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)


def adaptive_target_log_probs(softmax: AdaptiveSoftmax, features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log p(target) under fairseq's ``AdaptiveSoftmax``, computing only the
    head and the bands the targets fall in ((B, T, d), (B, T) -> (B, T))."""
    shape, features, target = target.shape, features.reshape(-1, features.size(-1)), target.reshape(-1)
    cutoff = softmax.cutoff
    head = F.log_softmax(softmax.head(features).float(), dim=-1)
    in_head = target < cutoff[0]
    result = head.gather(-1, target.clamp(max=cutoff[0] - 1).unsqueeze(-1)).squeeze(-1).masked_fill(~in_head, 0.0)
    for band, (start, stop) in enumerate(zip(cutoff, cutoff[1:])):
        rows = ((target >= start) & (target < stop)).nonzero().squeeze(-1)
        if len(rows):
            band_lprobs = F.log_softmax(softmax.tail[band](features[rows]).float(), dim=-1)
            within = band_lprobs.gather(-1, (target[rows] - start).unsqueeze(-1)).squeeze(-1)
            result = result.index_put((rows,), head[rows, cutoff[0] + band] + within)
    return result.view(shape)


class ClozeClassificationHead(nn.Module):
    """The paper's GLUE head: the features at ``boundaries`` positions (2: the
    two ``<s>`` of one text; 3: with the ``<sep>`` of a pair) concatenated,
    scaled by ``LM_OUTPUT_SCALE``, dropout, and one linear layer to the
    classes whose weights and bias start at zero."""

    def __init__(self, input_dim: int, boundaries: int, num_classes: int, dropout: float):
        super().__init__()
        self.boundaries = boundaries
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(boundaries * input_dim, num_classes)
        nn.init.zeros_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, features: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """(B, T, d) features, (B, K) boundary positions -> (B, C) logits."""
        gathered = features.gather(1, positions.unsqueeze(-1).expand(-1, -1, features.size(-1)))
        return self.out_proj(self.dropout(LM_OUTPUT_SCALE * gathered.flatten(1)))


@register_model("cloze_two_tower", dataclass=ClozeTwoTowerConfig)
class ClozeTwoTowerModel(EncoderInterface, BaseFairseqModel):
    """The cloze two-tower model as a fairseq model (``ClozeTwoTower`` inside,
    as ``self.network``); every head (classification and task heads) in
    ``classification_heads``, a ``TaskHeads``."""

    WORD_TABLE_KEY = "network.embed_tokens.weight"  # none with the char-CNN

    input_end_symbol = "<s>"  # what closes its inputs (pre-training blocks are <s> ... <s>; token_labelling reads it)
    indexes_from_input_start = True  # its inputs count their indexes from their first token, as its blocks do

    def __init__(self, cfg: ClozeTwoTowerConfig, network: ClozeTwoTower, separator: Optional[int] = None,
                 appended: int = 0):
        super().__init__()
        self.cfg = cfg
        self.network = network
        self.separator = separator  # the index of <sep> (pairs of texts), None without it
        self.appended = appended  # the dictionary's fine-tuning symbols, after the pre-training ones
        self.classification_heads = TaskHeads()

    @classmethod
    def build_model(cls, cfg: ClozeTwoTowerConfig, task):
        dictionary = task.source_dictionary
        return cls(cfg, ClozeTwoTower(cfg, dictionary), dictionary.indices.get(SEP_SYMBOL),
                   appended_symbols(dictionary))

    def forward(self, src_tokens, src_lengths=None, paragraph_index=None, sentence_index=None, token_index=None,
                cloze: bool = True, bilm: bool = False, features_only: bool = False,
                classification_head_name: Optional[str] = None, **unused):
        """The features of ``ClozeTwoTower.forward``, or with
        ``classification_head_name`` the (B, C) logits of that head and an
        empty dict (RoBERTa's ``(logits, extra)``; ``features_only`` is taken
        for RoBERTa's call and changes nothing)."""
        if classification_head_name is not None:
            head = self.classification_heads[classification_head_name]
            features = self.token_features(src_tokens, paragraph_index=paragraph_index,
                                           sentence_index=sentence_index, token_index=token_index)
            return head(features, self.boundary_positions(src_tokens, head.boundaries)), {}
        return self.network(src_tokens, paragraph_index=paragraph_index, sentence_index=sentence_index,
                            token_index=token_index, cloze=cloze, bilm=bilm)

    def log_probs(self, features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.network.log_probs(features, target)

    @property
    def combination_mask(self) -> str:
        """``full`` (pre-training) or ``none`` (fine-tuning)."""
        return self.network.combination_mask

    def set_combination_mask(self, mode: str) -> None:
        """``full`` (pre-training) or ``none`` (fine-tuning)."""
        if mode not in COMBINATION_MASKS:
            raise ValueError(f"combination mask {mode!r}: one of {', '.join(COMBINATION_MASKS)}")
        self.network.combination_mask = mode

    def max_positions(self):
        return self.cfg.max_target_positions

    @property
    def token_feature_dim(self) -> int:
        return self.cfg.decoder_embed_dim

    def token_features(self, src_tokens, paragraph_index=None, sentence_index=None, token_index=None, **unused):
        """(B, T, d) the combination's output with nothing masked: what every
        fine-tuning head reads (``models/token_label_heads.py``, ``ClozeClassificationHead``)."""
        return self.network.unmasked_cloze(src_tokens, paragraph_index=paragraph_index,
                                           sentence_index=sentence_index, token_index=token_index)

    def task_head_container(self) -> TaskHeads:
        return self.classification_heads

    def index_tables(self) -> Dict[str, nn.Embedding]:
        return dict(self.network.segment_embeddings)

    def word_embeddings(self) -> nn.Embedding:
        if not isinstance(self.network.embed_tokens, nn.Embedding):
            raise self._not_given("word embedding table (--input-embedder char-cnn)")
        return self.network.embed_tokens

    def register_classification_head(self, name: str, num_classes: int, boundaries: int = 2, **unused) -> None:
        """The paper's GLUE head ``name``: ``boundaries`` 2 for one text
        (``<s> a <s>``), 3 for pairs (``<s> a <sep> b <s>``)."""
        if boundaries == 3 and self.separator is None:
            raise ValueError(f"a head over pairs needs {SEP_SYMBOL} in the dictionary "
                             f"(--task cloze_sentence_prediction appends it)")
        self.classification_heads[name] = ClozeClassificationHead(self.cfg.decoder_embed_dim, boundaries, num_classes,
                                                                  self.cfg.classifier_dropout)

    def boundary_positions(self, src_tokens: torch.Tensor, boundaries: int) -> torch.Tensor:
        """(B, K) positions of the first token, (for K = 3) the ``<sep>``, and
        the last non-padding token of each right-padded example."""
        last = src_tokens.ne(self.network.padding_idx).sum(1) - 1
        first = torch.zeros_like(last)
        if boundaries == 2:
            return torch.stack([first, last], dim=1)
        is_separator = src_tokens.eq(self.separator)
        if not is_separator.sum(1).eq(1).all():
            raise ValueError(f"an example of a pair head needs exactly one {SEP_SYMBOL}")
        return torch.stack([first, is_separator.long().argmax(1), last], dim=1)

    def upgrade_state_dict_named(self, state_dict, name):
        super().upgrade_state_dict_named(state_dict, name)
        self._upgrade_for_finetuning(state_dict, name)

    def vocabulary_tables(self) -> Dict[str, torch.Tensor]:
        """The token table (not the char-CNN's, which has none) and the
        adaptive softmax's last band."""
        tables = {}
        if isinstance(self.network.embed_tokens, nn.Embedding):
            tables["network.embed_tokens.weight"] = self.network.embed_tokens.weight
        if self.network.adaptive_softmax is not None:
            tail = self.network.adaptive_softmax.tail
            tables[f"network.adaptive_softmax.tail.{len(tail) - 1}.2.weight"] = tail[-1][2].weight
        return tables

    def _upgrade_for_finetuning(self, state_dict, name) -> None:
        """The rows of the appended fine-tuning symbols (``models.vocabulary_rows``) and the heads."""
        prefix = name + "." if name else ""
        append_vocabulary_rows(state_dict, prefix, self.vocabulary_tables(), self.appended, "cloze_two_tower")
        self.classification_heads.restore(state_dict, prefix + "classification_heads.")

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
                        data_name_or_path: str = ".", **overrides):
        """A ``ClozeTwoTowerHubInterface`` (``encode``, ``token_log_probs``,
        ``pseudo_perplexity``) of the checkpoint ``model_name_or_path/checkpoint_file``;
        ``data_name_or_path`` is the segatron-preprocess directory it was
        trained on (relative to the model directory when it starts with '.';
        ``hub.checkpoints``: the checks and errors of every hub)."""
        from segatron_fairseq.hub.cloze_two_tower import ClozeTwoTowerHubInterface  # the hub sits above the models

        return ClozeTwoTowerHubInterface.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                                         overrides)


register_presets("cloze_two_tower", PRESETS, ClozeTwoTowerConfig)

__all__ = ["ClozeClassificationHead", "ClozeTwoTower", "ClozeTwoTowerConfig", "ClozeTwoTowerModel", "LM_OUTPUT_SCALE",
           "PRESETS"]
