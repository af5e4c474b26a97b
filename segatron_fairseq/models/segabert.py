"""SegaBERT: a RoBERTa-style encoder whose input sums the token embedding with
learned paragraph-, sentence- and token-index embeddings (Segatron, Figure 1b).

Built on fairseq's RoBERTa (encoder, LM head, classification heads); only the
input embedding changes. The indexes come in as ``paragraph_index``,
``sentence_index`` and ``token_index`` (B, T) next to ``src_tokens``, and,
with ``--num-token-types`` (BERT's segment A / B embedding, on in the
BERT-sized architectures), ``token_type`` (B, T; all 0 when absent). With
``--no-segment-positions`` the same code is BERT: ordinary learned absolute
positions and no index tables (architectures ``segabert_bert_*``: fairseq
itself registers ``bert_base``/``bert_large`` for its legacy masked_lm model).
"""
from typing import Dict, List, Optional

import torch
from fairseq.models import register_model
from fairseq.models.roberta.model import RobertaEncoder, RobertaModel, base_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr
from torch import nn

from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.presets import TINY_ENCODER, apply_preset, register_presets, set_defaults
from segatron_fairseq.models.task_heads import TaskHeads
from segatron_fairseq.modules import (
    FactorizedLMHead,
    FactorizedTransformerEncoder,
    add_index_embeddings,
    share_layers,
)
from segatron_fairseq.modules.shared_layers import SHARING
from segatron_fairseq.segments import TABLE_SIZES


class SegaBERTEncoder(RobertaEncoder):
    """RoBERTa's encoder with the index (and token-type) tables added to the
    token embedding. With ``--factorized-embed-dim E`` (ALBERT's factorized
    embedding) every table is E wide and ``modules.factorized_embedding``
    projects their sum to the layers' width."""

    def __init__(self, args, dictionary):
        check_sharing_options(args)
        factorized = safe_getattr(args, "factorized_embed_dim", None)
        if factorized is not None and factorized < 0:
            raise ValueError(f"--factorized-embed-dim {factorized}: must be at least 1 (0: no factorization)")
        self.embedding_dim = factorized or args.encoder_embed_dim
        super().__init__(args, dictionary)
        self.segment_positions = not args.no_segment_positions
        self.segment_embeddings = nn.ModuleDict()
        if self.segment_positions:
            for name in TABLE_SIZES:
                table = nn.Embedding(getattr(args, f"max_{name}_index"), self.embedding_dim)
                init_bert_params(table)
                self.segment_embeddings[name] = table
        self.token_type_embeddings = None
        if args.num_token_types:
            self.token_type_embeddings = nn.Embedding(args.num_token_types, self.embedding_dim)
            init_bert_params(self.token_type_embeddings)
        layer_norm_eps = safe_getattr(args, "layer_norm_eps", None)
        if layer_norm_eps is not None:  # fairseq's layers take the LayerNorm default, 1e-5
            for module in self.modules():
                if isinstance(module, nn.LayerNorm):
                    module.eps = layer_norm_eps

    def build_embedding(self, vocab_size, embedding_dim, padding_idx):
        return super().build_embedding(vocab_size, self.embedding_dim, padding_idx)

    def build_encoder(self, args, dictionary, embed_tokens):
        encoder = FactorizedTransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        share_layers(encoder, safe_getattr(args, "share_encoder_layers", None) or "none",
                     safe_getattr(args, "encoder_layer_groups", None) or 1)
        return encoder

    def build_lm_head(self, embed_dim, output_dim, activation_fn, weight):
        if self.embedding_dim == embed_dim:
            return super().build_lm_head(embed_dim, output_dim, activation_fn, weight)
        return FactorizedLMHead(embed_dim, self.embedding_dim, output_dim, activation_fn, weight)

    def embed(self, src_tokens, paragraph_index=None, sentence_index=None, token_index=None, token_type=None):
        """(B, T) ids and indexes -> (B, T, E) sum of token, index and token-type
        embeddings (before fairseq's embedding LayerNorm and dropout; E is the
        hidden size unless the embedding is factorized)."""
        embedding = self.sentence_encoder.embed_tokens(src_tokens)
        if self.token_type_embeddings is not None:
            if token_type is None:
                token_type = src_tokens.new_zeros(src_tokens.shape)
            elif token_type.numel() and int(token_type.max()) >= self.token_type_embeddings.num_embeddings:
                raise ValueError(f"token_type {int(token_type.max())} exceeds the "
                                 f"{self.token_type_embeddings.num_embeddings} token types (--num-token-types)")
            embedding = embedding + self.token_type_embeddings(token_type)
        if self.segment_positions:
            indexes = {"paragraph": paragraph_index, "sentence": sentence_index, "token": token_index}
            embedding = add_index_embeddings(embedding, self.segment_embeddings, indexes,
                                             "SegaBERT needs {name}_index next to src_tokens (use a segabert_* task)")
        return embedding

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, masked_tokens=None,
                paragraph_index=None, sentence_index=None, token_index=None, token_type=None, **unused):
        token_embeddings = self.embed(src_tokens, paragraph_index, sentence_index, token_index, token_type)
        x, extra = self.extract_features(src_tokens, return_all_hiddens=return_all_hiddens,
                                         token_embeddings=token_embeddings)
        if not features_only:
            x = self.output_layer(x, masked_tokens=masked_tokens)
        return x, extra

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of 0.1.0 have no token-type table, which the BERT-sized
        architectures now have: a table of zeros adds nothing, as before."""
        super().upgrade_state_dict_named(state_dict, name)
        key = (name + "." if name else "") + "token_type_embeddings.weight"
        if self.token_type_embeddings is not None and key not in state_dict:
            state_dict[key] = self.token_type_embeddings.weight.new_zeros(self.token_type_embeddings.weight.shape)


@register_model("segabert")
class SegaBERTModel(EncoderInterface, RobertaModel):
    """RoBERTa with ``SegaBERTEncoder``; RoBERTa's dense classification heads
    in ``classification_heads``, every other head in ``task_heads``."""

    WORD_TABLE_KEY = "encoder.sentence_encoder.embed_tokens.weight"

    def __init__(self, args, encoder):
        super().__init__(args, encoder)
        self.task_heads = TaskHeads()

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        for name, size in TABLE_SIZES.items():
            parser.add_argument(f"--max-{name}-index", type=int, help=f"{name} index table size ({size})")
        parser.add_argument("--no-segment-positions", action="store_true", default=None,
                            help="BERT: learned absolute positions instead of the index tables")
        parser.add_argument("--num-token-types", type=int,
                            help="token-type (segment A / B) embeddings; 0: none (2 in the base and large sizes)")
        parser.add_argument("--factorized-embed-dim", type=int,
                            help="ALBERT's factorized embedding: tables of this width, projected to "
                                 "--encoder-embed-dim (default: no factorization)")
        parser.add_argument("--share-encoder-layers", choices=SHARING,
                            help="ALBERT's cross-layer sharing: the whole layer (all), the self-attention or "
                                 "the feed-forward block (default: none)")
        parser.add_argument("--encoder-layer-groups", type=int,
                            help="with --share-encoder-layers: groups of layers sharing weights, layer l in "
                                 "group floor(l*G/L) (ALBERT's num_hidden_groups; default 1)")
        parser.add_argument("--layer-norm-eps", type=float,
                            help="epsilon of every LayerNorm (default 1e-5; BERT checkpoints use 1e-12)")

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
                        data_name_or_path: str = ".", **overrides):
        """A ``SegaBERTHubInterface`` (``encode``, ``extract_features``,
        ``fill_mask``, ``predict``) of the checkpoint
        ``model_name_or_path/checkpoint_file``, pre-trained (segabert_mlm) or
        fine-tuned (any task with ``pretrain_data``: indexed_sentence_prediction,
        extractive_qa, multiple_choice_qa, siamese_nli). ``data_name_or_path`` is the
        segatron-preprocess directory of pre-training (relative to the model
        directory when it starts with '.'; ``hub.checkpoints``: the checks and
        errors of every hub)."""
        from segatron_fairseq.hub.segabert import SegaBERTHubInterface  # the hub sits above the models

        return SegaBERTHubInterface.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, overrides)

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, classification_head_name=None,
                **kwargs):
        """RoBERTa's forward, where ``classification_head_name`` may also name a
        task head over every position (an answer-span head: (B, T, 2))."""
        if classification_head_name in self.task_heads:
            x, extra = self.encoder(src_tokens, True, return_all_hiddens, **kwargs)
            return self.task_heads[classification_head_name](x), extra
        return super().forward(src_tokens, features_only, return_all_hiddens, classification_head_name, **kwargs)

    def token_features(self, src_tokens, **net_input):
        """(B, T, d) last layer at every position: what the task heads read."""
        features, _ = self.encoder(src_tokens, features_only=True, **net_input)
        return features

    @property
    def token_feature_dim(self) -> int:
        return self.args.encoder_embed_dim

    def index_tables(self) -> Dict[str, nn.Embedding]:
        return dict(self.encoder.segment_embeddings)

    def word_embeddings(self) -> nn.Embedding:
        return self.encoder.sentence_encoder.embed_tokens

    @property
    def layer_norm_eps(self) -> float:
        return safe_getattr(self.args, "layer_norm_eps", None) or 1e-5

    def has_masked_lm_head(self) -> bool:
        """False for ELECTRA's discriminator."""
        return self.encoder.lm_head is not None

    def masked_lm_logits(self, features: torch.Tensor, masked_tokens: torch.Tensor) -> torch.Tensor:
        """(B, T, d) features -> (M, V) logits at the (B, T) ``masked_tokens`` (the encoder's output layer)."""
        return self.encoder.output_layer(features, masked_tokens=masked_tokens)

    def task_head_container(self) -> TaskHeads:
        return self.task_heads

    def classification_head_names(self) -> List[str]:
        return list(self.classification_heads)

    def _classification_head(self, name: str) -> nn.Module:
        return self.classification_heads[name]

    def upgrade_state_dict_named(self, state_dict, name):
        """RoBERTa's upgrade of its classification heads, then ``TaskHeads.restore``
        of the task heads. A checkpoint from before 0.3.0 kept the task heads
        (those without RoBERTa's ``dense`` layer) in ``classification_heads``:
        they move to ``task_heads`` first."""
        prefix = name + "." if name else ""
        roberta_heads = prefix + "classification_heads."
        TaskHeads.move_heads(state_dict, roberta_heads, prefix + "task_heads.",
                             [head for head in TaskHeads.saved_names(state_dict, roberta_heads)
                              if roberta_heads + head + ".dense.weight" not in state_dict])
        super().upgrade_state_dict_named(state_dict, name)
        self.task_heads.restore(state_dict, prefix + "task_heads.")

    @classmethod
    def build_model(cls, args, task):
        apply_preset(args, SEGABERT_PRESETS["base"], segabert_defaults)
        if not safe_getattr(args, "max_positions", None):
            args.max_positions = task.max_positions() or 512
        return cls(args, SegaBERTEncoder(args, task.source_dictionary))


def check_sharing_options(args) -> None:
    """``--encoder-layer-groups`` is 1 to the number of layers, and more than
    one group needs ``--share-encoder-layers``."""
    groups = safe_getattr(args, "encoder_layer_groups", None)
    if groups is None:
        return
    layers = args.encoder_layers
    if not 1 <= groups <= layers:
        raise ValueError(f"--encoder-layer-groups {groups}: must be 1 to the {layers} layers (--encoder-layers)")
    if groups > 1 and (safe_getattr(args, "share_encoder_layers", None) or "none") == "none":
        raise ValueError(f"--encoder-layer-groups {groups} needs --share-encoder-layers all|attention|ffn "
                         "(without sharing every layer is its own)")


def segabert_defaults(args) -> None:
    """The index tables unless ``--no-segment-positions`` (then BERT's learned
    absolute positions), then RoBERTa's base architecture."""
    set_defaults(args, no_segment_positions=False, **{f"max_{name}_index": size for name, size in TABLE_SIZES.items()})
    # SegaBERT replaces absolute positions by the token index within the sentence
    args.no_token_positional_embeddings = not args.no_segment_positions
    base_architecture(args)


def without_index_tables(presets: Dict[str, dict]) -> Dict[str, dict]:
    """``presets`` with BERT's learned absolute positions instead of the index tables."""
    return {name: dict(preset, no_segment_positions=True) for name, preset in presets.items()}


def encoder_size(layers: int, width: int, heads: int) -> dict:
    """An encoder of ``layers`` layers ``width`` wide with ``heads`` heads and a feed-forward 4 x ``width`` wide."""
    return dict(encoder_layers=layers, encoder_embed_dim=width, encoder_ffn_embed_dim=4 * width,
                encoder_attention_heads=heads)


# BERT's sizes, with its two token types; tiny: the demo's and the tests'
SEGABERT_PRESETS = {"base": dict(encoder_size(12, 768, 12), num_token_types=2),
                    "large": dict(encoder_size(24, 1024, 16), num_token_types=2),
                    "tiny": dict(TINY_ENCODER, num_token_types=0)}
# ALBERT (Lan et al., 2020) at its sizes: factorized embedding (E = 128), every layer sharing one layer's
# weights, the tanh GeLU (gelu_accurate), BERT's two token types
ALBERT_PRESETS = {size: dict(encoder_size(*shape), num_token_types=2, factorized_embed_dim=128,
                             share_encoder_layers="all", encoder_layer_groups=1, activation_fn="gelu_accurate")
                  for size, shape in {"base": (12, 768, 12), "large": (24, 1024, 16), "xlarge": (24, 2048, 32),
                                      "xxlarge": (12, 4096, 64)}.items()}

register_presets("segabert", SEGABERT_PRESETS, segabert_defaults)
register_presets("segabert", without_index_tables(SEGABERT_PRESETS), segabert_defaults, prefix="segabert_bert")
register_presets("segabert", ALBERT_PRESETS, segabert_defaults, prefix="segabert_albert")
register_presets("segabert", without_index_tables(ALBERT_PRESETS), segabert_defaults, prefix="albert",
                 alias_prefix="segabert_bert_albert")

__all__ = ["SegaBERTEncoder", "SegaBERTModel"]
