"""ELECTRA on the SegaBERT encoder (Clark et al., 2020): a small masked-LM
generator and a discriminator that tells, for every token, whether the
generator replaced it (criterion ``electra``).

Both are ``SegaBERTEncoder``s, with the index tables or, with
``--no-segment-positions`` (architectures ``electra_*``),
BERT's learned positions. They share the whole embedding scope: the word
table, the index tables (or positions), the token types and the embedding
LayerNorm, all E = ``--factorized-embed-dim`` wide; each has its own
E -> width projection when E differs from its width. The generator is as deep
as the discriminator and ``--generator-width-fraction`` as wide (heads
width / 64, feed-forward 4 x width), unless sizes are given; its head is the
(factorized) masked-LM head tied to the shared word table. The
discriminator is this model's ``encoder``, so the state dict of everything
fine-tuning uses is a SegaBERT one::

    encoder.*             the discriminator (no masked-LM head)
    encoder.rtd_head.*    dense H -> H, activation, dense_prediction H -> 1 (pre-training only)
    generator.*           the generator (its copies of the shared tables are the same tensors)

The generator and the replaced-token head are built only for a task that
masks tokens (``segabert_mlm``: it has a ``mask_idx``). Built for any other
task (fine-tuning, ``--restore-file`` of a pre-trained ELECTRA), the model is
the discriminator alone and ``upgrade_state_dict_named`` leaves the
generator's and the head's tensors of a checkpoint out.
"""
import copy
import logging
from typing import Optional

import torch
from fairseq import utils
from fairseq.models import register_model
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr
from torch import nn

from segatron_fairseq.models.presets import TINY_ENCODER, apply_preset, register_presets
from segatron_fairseq.models.segabert import SegaBERTEncoder, SegaBERTModel, segabert_defaults, without_index_tables

logger = logging.getLogger(__name__)

GENERATOR_PREFIX = "generator."
RTD_HEAD = "rtd_head"


class ReplacedTokenHead(nn.Module):
    """ELECTRA's discriminator head: (..., H) -> dense H -> H, activation,
    ``dense_prediction`` H -> 1 -> (...) logits that a token was replaced."""

    def __init__(self, hidden_dim: int, activation_fn: str):
        super().__init__()
        self.dense = nn.Linear(hidden_dim, hidden_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.dense_prediction = nn.Linear(hidden_dim, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(self.activation_fn(self.dense(features))).squeeze(-1)


class ElectraDiscriminatorEncoder(SegaBERTEncoder):
    """A SegaBERT encoder without a masked-LM head; its output layer is the
    replaced-token head when it has one (pre-training)."""

    def __init__(self, args, dictionary, replaced_token_head: bool):
        super().__init__(args, dictionary)
        self.rtd_head = ReplacedTokenHead(args.encoder_embed_dim, args.activation_fn) if replaced_token_head else None
        if self.rtd_head is not None:
            self.rtd_head.apply(init_bert_params)

    def build_lm_head(self, embed_dim, output_dim, activation_fn, weight):
        return None

    def output_layer(self, features, masked_tokens=None, **unused):
        """(B, T, H) -> (B, T) replaced-token logits."""
        if masked_tokens is not None:
            raise ValueError("a segabert_electra model has no masked-LM head: pre-train it with --criterion electra "
                             "(masked_lm, masked_lm_sop and span_boundary_mlm need a segabert model)")
        if self.rtd_head is None:
            raise ValueError("this ELECTRA discriminator was built for fine-tuning: it has no replaced-token head "
                             "(use features_only=True)")
        return self.rtd_head(features)


def generator_sizes(args) -> dict:
    """The generator's layers, width, heads and feed-forward width: the
    explicit ``--generator-*`` options, else ``--generator-width-fraction`` of
    the discriminator's width, heads width / 64 (at least 1), feed-forward
    4 x width, as deep as the discriminator."""
    for option in ("embed_dim", "ffn_embed_dim", "attention_heads", "layers"):
        value = safe_getattr(args, f"generator_{option}", None)
        if value is not None and value < 1:
            raise ValueError(f"--generator-{option.replace('_', '-')} {value}: must be at least 1")
    width = safe_getattr(args, "generator_embed_dim", None)
    if width is None:
        if args.generator_width_fraction <= 0:
            raise ValueError(f"--generator-width-fraction {args.generator_width_fraction}: must be above 0 "
                             "(ELECTRA: 1/4 to 1/3)")
        width = max(1, round(args.encoder_embed_dim * args.generator_width_fraction))
    heads = safe_getattr(args, "generator_attention_heads", None) or max(1, width // 64)
    if width % heads:
        raise ValueError(f"the generator's width {width} is not divisible by its {heads} heads "
                         "(--generator-attention-heads)")
    return dict(encoder_layers=safe_getattr(args, "generator_layers", None) or args.encoder_layers,
                encoder_embed_dim=width, encoder_attention_heads=heads,
                encoder_ffn_embed_dim=safe_getattr(args, "generator_ffn_embed_dim", None) or 4 * width)


def build_generator(args, dictionary, discriminator: SegaBERTEncoder) -> SegaBERTEncoder:
    """The generator: a SegaBERT encoder at ``generator_sizes`` whose
    embedding scope is the discriminator's (the same modules) and whose
    masked-LM head decodes with the shared word table."""
    generator_args = copy.deepcopy(args)  # an argparse Namespace, or fairseq-hydra-train's DictConfig
    for name, value in generator_sizes(args).items():
        setattr(generator_args, name, value)
    generator_args.factorized_embed_dim = discriminator.embedding_dim
    generator_args.untie_weights_roberta = False
    generator_args.encoder_layers_to_keep = None
    generator = SegaBERTEncoder(generator_args, dictionary)
    ours, theirs = generator.sentence_encoder, discriminator.sentence_encoder
    for name in ("embed_tokens", "embed_positions", "layernorm_embedding"):
        setattr(ours, name, getattr(theirs, name))
    generator.segment_embeddings = discriminator.segment_embeddings
    generator.token_type_embeddings = discriminator.token_type_embeddings
    generator.lm_head.weight = theirs.embed_tokens.weight
    # the model's BERT initialisation ran before the generator was attached (its encoder's ran in build_encoder)
    generator.lm_head.apply(init_bert_params)
    return generator


@register_model("segabert_electra")
class SegaBERTElectraModel(SegaBERTModel):
    """ELECTRA's generator and discriminator (see the module doc). Called as a
    SegaBERT model it is the discriminator: features, classification heads,
    and without ``features_only`` the (B, T) replaced-token logits.
    ``from_pretrained`` (SegaBERT's) gives the discriminator's hub interface
    (``encode``, ``extract_features``, ``predict``; no ``fill_mask``: the
    discriminator has no masked-LM head)."""

    def __init__(self, args, encoder: ElectraDiscriminatorEncoder, generator: Optional[SegaBERTEncoder] = None):
        super().__init__(args, encoder)
        self.generator = generator

    @staticmethod
    def add_args(parser):
        SegaBERTModel.add_args(parser)
        parser.add_argument("--generator-width-fraction", type=float,
                            help="the generator's width as a fraction of the discriminator's (1/4 small, 1/3 base)")
        parser.add_argument("--generator-embed-dim", type=int, help="the generator's width (instead of the fraction)")
        parser.add_argument("--generator-ffn-embed-dim", type=int, help="its feed-forward width (default 4 x width)")
        parser.add_argument("--generator-attention-heads", type=int, help="its heads (default width / 64, at least 1)")
        parser.add_argument("--generator-layers", type=int, help="its layers (default: the discriminator's)")

    @classmethod
    def build_model(cls, args, task):
        apply_preset(args, ELECTRA_PRESETS["small"], segabert_defaults)
        if not safe_getattr(args, "max_positions", None):
            args.max_positions = task.max_positions() or 512
        pretraining = getattr(task, "mask_idx", None) is not None
        discriminator = ElectraDiscriminatorEncoder(args, task.source_dictionary, replaced_token_head=pretraining)
        generator = build_generator(args, task.source_dictionary, discriminator) if pretraining else None
        return cls(args, discriminator, generator)

    def has_generator(self) -> bool:
        """Whether this model was built for pre-training (with the generator
        and the replaced-token head) rather than for fine-tuning."""
        return self.generator is not None

    def generate(self, src_tokens, masked_tokens, **indexes) -> torch.Tensor:
        """The generator's (M, V) logits at the ``masked_tokens`` (B, T) of
        ``src_tokens`` (with the indexes of ``SegaBERTEncoder.forward``)."""
        if self.generator is None:
            raise ValueError("this ELECTRA model was built for fine-tuning: it has no generator")
        logits, _ = self.generator(src_tokens, masked_tokens=masked_tokens, **indexes)
        return logits

    def discriminate(self, src_tokens, **indexes) -> torch.Tensor:
        """The discriminator's (B, T) logits that each token was replaced."""
        logits, _ = self.encoder(src_tokens, **indexes)
        return logits

    def upgrade_state_dict_named(self, state_dict, name):
        """SegaBERT's upgrade; a model built without the generator (or the
        replaced-token head) leaves a pre-trained checkpoint's out."""
        prefix = name + "." if name else ""
        left_out = []
        if self.generator is None:
            left_out += [k for k in state_dict if k.startswith(prefix + GENERATOR_PREFIX)]
        if self.encoder.rtd_head is None:
            left_out += [k for k in state_dict if k.startswith(f"{prefix}encoder.{RTD_HEAD}.")]
        for key in left_out:
            del state_dict[key]
        if left_out:
            logger.info(f"the discriminator alone: leaving out {len(left_out)} tensors of the generator and the "
                        "replaced-token head")
        super().upgrade_state_dict_named(state_dict, name)


# the sizes of ELECTRA's configure_pretraining.py (base: E = H, so no projection), with BERT's two token types;
# tiny: the tests' and the demo's
ELECTRA_PRESETS = {
    "small": dict(encoder_layers=12, encoder_embed_dim=256, encoder_attention_heads=4, encoder_ffn_embed_dim=1024,
                  factorized_embed_dim=128, generator_width_fraction=0.25, num_token_types=2),
    "base": dict(encoder_layers=12, encoder_embed_dim=768, encoder_attention_heads=12, encoder_ffn_embed_dim=3072,
                 factorized_embed_dim=768, generator_width_fraction=1 / 3, num_token_types=2),
    "tiny": dict(TINY_ENCODER, factorized_embed_dim=32, generator_width_fraction=0.25, num_token_types=0),
}

register_presets("segabert_electra", ELECTRA_PRESETS, segabert_defaults)
register_presets("segabert_electra", without_index_tables(ELECTRA_PRESETS), segabert_defaults, prefix="electra",
                 alias_prefix="segabert_bert_electra")


__all__ = ["ElectraDiscriminatorEncoder", "ReplacedTokenHead", "SegaBERTElectraModel", "generator_sizes"]
