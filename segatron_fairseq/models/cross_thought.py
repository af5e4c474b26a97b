"""Cross-Thought (Wang et al., 2020): a sentence encoder pre-trained by
recovering masked words from the embeddings of other short sequences.

Input ``src_tokens`` (B, M, L): M short sequences per sample. Each sequence
gets N special tokens in front, with their own embeddings S (N, d) at fixed
positions 0..N-1; its words take consecutive positions N+o .. N+o+L-1 from an
offset o drawn per sample in training (0 in evaluation), so longer inputs can
be encoded later. A RoBERTa encoder (fairseq's) reads every sequence (Eq. 1-2);
the N special-token states E_m are its embedding. For each special index n a
cross-sequence Transformer runs over F_n = [E_0[n]; ..; E_{M-1}[n]] (Eq. 4-7);
its outputs C_n replace the special states, one more encoder layer reads each
sequence again (Eq. 8) and the tied LM head predicts masked words (Eq. 9).

``extra`` carries ``cross_attention`` (B, M, M): alpha of Eq. 7 averaged over
heads and special indexes, ``sequence_embeddings`` and ``cross_states``
(B, M, N, d).
"""
from typing import Optional, Tuple

import torch
from fairseq.models import register_model
from fairseq.models.roberta.model import RobertaEncoder, RobertaModel, base_architecture
from torch import nn
from torch.utils.checkpoint import checkpoint

from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.presets import TINY_ENCODER, register_presets, set_defaults
from segatron_fairseq.models.task_heads import TaskHeads
from segatron_fairseq.modules import CrossSequenceLayer


class PairClassificationHead(nn.Module):
    """Eq. 11: a linear layer over the flattened 2N cross states of a pair, or
    (``average``, as the authors' code) a RoBERTa-style head over their mean."""

    def __init__(self, embed_dim: int, num_special: int, num_classes: int, pooling: str, dropout: float):
        super().__init__()
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        if pooling == "flatten":
            self.out_proj = nn.Linear(2 * num_special * embed_dim, num_classes)
        elif pooling == "average":
            self.dense = nn.Linear(embed_dim, embed_dim)
            self.out_proj = nn.Linear(embed_dim, num_classes)
        else:
            raise ValueError(f"pair pooling {pooling!r}: use flatten or average")

    def forward(self, cross_states):
        """cross_states (B, 2, N, d) -> (B, num_classes)."""
        if self.pooling == "flatten":
            return self.out_proj(self.dropout(cross_states.flatten(1)))
        pooled = torch.tanh(self.dense(self.dropout(cross_states.mean(dim=(1, 2)))))
        return self.out_proj(self.dropout(pooled))


BERT_INIT_STD = 0.02  # the std of fairseq's init_bert_params


def scale_initial_weights(model: nn.Module, init_std: float):
    """Turn BERT's N(0, 0.02) initialisation of every linear, embedding and
    attention projection weight (RobertaModel applies it to all modules) into
    N(0, init_std). Shared weights (the tied LM head) are scaled once."""
    weights = {}
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            weights[id(module.weight)] = module.weight
    with torch.no_grad():
        for weight in weights.values():
            weight.mul_(init_std / BERT_INIT_STD)


class CrossThoughtEncoder(RobertaEncoder):
    def __init__(self, args, dictionary):
        args.no_token_positional_embeddings = True  # positions are added here (fixed for specials)
        super().__init__(args, dictionary)
        dim = args.encoder_embed_dim
        self.num_special = args.num_special_tokens
        self.special_embeddings = nn.Embedding(1 if args.shared_special_embedding else self.num_special, dim)
        self.positions = nn.Embedding(args.max_positions, dim)
        self.max_positions = args.max_positions
        self.random_word_positions = not args.fixed_word_positions
        self.mask_self = args.cross_mask_self
        self.chunk_sequences = args.encoder_chunk_sequences
        self.use_cross = not args.no_cross_layer
        groups = 1 if args.share_cross_layers else self.num_special
        self.cross_layers = nn.ModuleList(
            nn.ModuleList(
                CrossSequenceLayer(dim, args.encoder_attention_heads, args.encoder_ffn_embed_dim, args.dropout,
                                   args.attention_dropout)
                for _ in range(args.cross_layers)
            )
            for _ in range(groups)
        )
        self.final_layer = self.sentence_encoder.build_encoder_layer(args)

    # ---- embeddings -----------------------------------------------------------------------------

    def _word_offsets(self, batch: int, length: int, device) -> torch.Tensor:
        largest = self.max_positions - self.num_special - length
        if largest < 0:
            raise ValueError(f"sequences of {length} tokens with {self.num_special} special tokens exceed "
                             f"--max-positions {self.max_positions}")
        if self.training and self.random_word_positions and largest > 0:
            return torch.randint(0, largest + 1, (batch,), device=device)
        return torch.zeros(batch, dtype=torch.long, device=device)

    def _encode_chunk(self, words, offsets, specials_only: bool):
        """Eq. 1-2 for S sequences: words (S, L), word offsets (S,) -> hidden
        states (N+L, S, d), or only the N special rows (N, S, d)."""
        count, length = words.shape
        special_index = torch.arange(self.num_special, device=words.device)
        ids = torch.cat([words.new_full((count, self.num_special), self.dictionary.bos()), words], dim=1)
        embedding_index = torch.zeros_like(special_index) if self.special_embeddings.num_embeddings == 1 \
            else special_index
        embedded = torch.cat([self.special_embeddings(embedding_index).expand(count, -1, -1),
                              self.sentence_encoder.embed_tokens(words)], dim=1)
        word_positions = self.num_special + offsets[:, None] + torch.arange(length, device=words.device)
        positions = torch.cat([special_index.expand(count, -1), word_positions], dim=1)
        hidden = self.sentence_encoder(ids, token_embeddings=embedded + self.positions(positions))["encoder_out"][0]
        return hidden[: self.num_special] if specials_only else hidden

    def encode_sequences(self, src_tokens, specials_only: bool = False):
        """(B, M, L) word ids -> hidden states (N+L, B*M, d) (only the N special
        rows with ``specials_only``), padding mask (B*M, N+L) and sequence
        embeddings E (B, M, N, d) (Eq. 1-2).

        With ``--encoder-chunk-sequences S`` the B*M sequences go through the
        encoder S at a time; in training each chunk is checkpointed (recomputed
        in the backward pass), so the encoder's activations are held for one
        chunk only, whatever M is."""
        batch, num_sequences, length = src_tokens.shape
        words = src_tokens.reshape(batch * num_sequences, length)
        offsets = self._word_offsets(batch, length, words.device).repeat_interleave(num_sequences)
        chunk = self.chunk_sequences if 0 < self.chunk_sequences < words.size(0) else words.size(0)
        pieces = []
        for start in range(0, words.size(0), chunk):
            inputs = (words[start:start + chunk], offsets[start:start + chunk], specials_only)
            if chunk < words.size(0) and torch.is_grad_enabled():
                pieces.append(checkpoint(self._encode_chunk, *inputs, use_reentrant=False))
            else:
                pieces.append(self._encode_chunk(*inputs))
        hidden = torch.cat(pieces, dim=1) if len(pieces) > 1 else pieces[0]
        padding = torch.cat([words.new_zeros((words.size(0), self.num_special), dtype=torch.bool),
                             words.eq(self.dictionary.pad())], dim=1)
        embeddings = hidden[: self.num_special].transpose(0, 1).reshape(batch, num_sequences, self.num_special, -1)
        return hidden, padding, embeddings

    # ---- cross-sequence Transformer ---------------------------------------------------------------

    def cross(self, embeddings, sequence_padding=None):
        """E (B, M, N, d) -> C (B, M, N, d) and alpha (B, M, M) averaged over
        heads and special indexes (Eq. 4-7)."""
        outputs, weights = [], []
        for n in range(self.num_special):
            layers = self._cross_group(n)
            states = embeddings[:, :, n].transpose(0, 1)  # (M, B, d)
            for k, layer in enumerate(layers):
                states, alpha = layer(states, self.mask_self, sequence_padding)
                if k == 0:
                    weights.append(alpha.mean(dim=1))
            outputs.append(states.transpose(0, 1))
        return torch.stack(outputs, dim=2), torch.stack(weights, dim=1).mean(dim=1)

    def _cross_group(self, n: int) -> nn.ModuleList:
        return self.cross_layers[0 if len(self.cross_layers) == 1 else n]

    def rank(self, question_embeddings, candidate_embeddings):
        """alpha[0][1:] of Eq. 7 for each question over a shared candidate pool,
        from embeddings computed once: (Q, N, d), (C, N, d) -> (Q, C), as if each
        question were sequence 0 followed by all the candidates."""
        num_questions, num_candidates = question_embeddings.size(0), candidate_embeddings.size(0)
        scores = []
        for n in range(self.num_special):
            layer = self._cross_group(n)[0]
            attention, heads = layer.attention, layer.num_heads
            q = (attention.q_proj(question_embeddings[:, n]) * attention.scaling).view(num_questions, heads, -1)
            own_keys = attention.k_proj(question_embeddings[:, n]).view(num_questions, heads, -1)
            keys = attention.k_proj(candidate_embeddings[:, n]).view(num_candidates, heads, -1)
            own = (q * own_keys).sum(-1, keepdim=True).float()  # (Q, H, 1): the question itself
            if self.mask_self:
                own = torch.full_like(own, float("-inf"))
            others = torch.einsum("qhd,chd->qhc", q, keys).float()
            alpha = torch.softmax(torch.cat([own, others], dim=-1), dim=-1)[..., 1:]
            scores.append(alpha.mean(dim=1))
        return torch.stack(scores).mean(dim=0)

    # ---- full model ----------------------------------------------------------------------------

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, masked_tokens=None,
                cross_only=False, **unused):
        """src_tokens (B, M, L). Returns (B, M, L, V) logits (or (B, M, L, d)
        features, or the masked positions' logits) and ``extra``."""
        batch, num_sequences, length = src_tokens.shape
        hidden, padding, embeddings = self.encode_sequences(src_tokens, specials_only=cross_only)
        sequence_padding = src_tokens.eq(self.dictionary.pad()).all(dim=-1)  # (B, M) missing sequences
        extra = {"sequence_embeddings": embeddings, "sequence_padding": sequence_padding}
        if self.use_cross:
            cross_states, extra["cross_attention"] = self.cross(embeddings, sequence_padding)
        else:
            cross_states = embeddings
        extra["cross_states"] = cross_states
        if cross_only:
            return None, extra
        specials = cross_states.reshape(batch * num_sequences, self.num_special, -1).transpose(0, 1)
        hidden = torch.cat([specials.to(hidden.dtype), hidden[self.num_special:]], dim=0)
        hidden = self.final_layer(hidden, encoder_padding_mask=padding)  # Eq. 8
        features = hidden[self.num_special:].transpose(0, 1).reshape(batch, num_sequences, length, -1)
        if features_only:
            return features, extra
        return self.output_layer(features, masked_tokens=masked_tokens), extra


@register_model("cross_thought")
class CrossThoughtModel(EncoderInterface, RobertaModel):
    """``CrossThoughtEncoder`` as a fairseq model; its heads (the pair
    classifiers of ``register_classification_head`` among them) in
    ``task_heads``: a flattening pair classifier has no RoBERTa ``dense``
    layer, which RoBERTa's ``classification_heads`` upgrade reads."""

    WORD_TABLE_KEY = "encoder.sentence_encoder.embed_tokens.weight"

    def __init__(self, args, encoder):
        super().__init__(args, encoder)  # BERT's initialisation of every module
        if args.init_std != BERT_INIT_STD:
            scale_initial_weights(self, args.init_std)
        self.task_heads = TaskHeads()

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        parser.add_argument("--num-special-tokens", type=int, help="N special tokens per sequence (5)")
        parser.add_argument("--shared-special-embedding", action="store_true", default=None,
                            help="one embedding for all special tokens (the authors' code)")
        parser.add_argument("--cross-layers", type=int, help="cross-sequence Transformer layers (1)")
        parser.add_argument("--share-cross-layers", action="store_true", default=None,
                            help="one cross-sequence Transformer for all special indexes (the authors' code)")
        parser.add_argument("--cross-mask-self", action="store_true", default=None,
                            help="a sequence does not attend to itself across sequences")
        parser.add_argument("--no-cross-layer", action="store_true", default=None,
                            help="ablation: no cross-sequence Transformer (a masked LM on short sequences)")
        parser.add_argument("--fixed-word-positions", action="store_true", default=None,
                            help="words always start at position N (no random offset in training)")
        parser.add_argument("--init-std", type=float,
                            help="std of the initial weights (BERT: 0.02; larger for narrow models, whose "
                                 "cross-sequence route is too weak at 0.02 to start learning)")
        parser.add_argument("--encoder-chunk-sequences", type=int,
                            help="encode at most this many short sequences at once, each chunk checkpointed in "
                                 "training, so memory stays bounded for many candidates or sequences (0: all)")
        parser.add_argument("--pair-pooling", choices=("flatten", "average"),
                            help="pair classifier input: flattened 2N cross states (paper) or their mean")

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
                        data_name_or_path: str = ".", **overrides):
        """A ``CrossThoughtHubInterface`` (``encode``, ``rank``) for the
        checkpoint ``model_name_or_path/checkpoint_file``; ``data_name_or_path``
        is the pre-training corpus (its dict.txt and sentencepiece.model),
        relative to the model directory when it starts with '.'
        (``hub.checkpoints``: the checks and errors of every hub)."""
        from segatron_fairseq.hub.cross_thought import CrossThoughtHubInterface  # the hub sits above the models

        return CrossThoughtHubInterface.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                                        overrides)

    @classmethod
    def build_model(cls, args, task):
        cross_thought_defaults(args)
        return cls(args, CrossThoughtEncoder(args, task.source_dictionary))

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        self.task_heads[name] = PairClassificationHead(
            self.args.encoder_embed_dim, self.args.num_special_tokens, num_classes, self.args.pair_pooling,
            self.args.pooler_dropout)

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, classification_head_name=None,
                **kwargs):
        if classification_head_name is not None:
            _, extra = self.encoder(src_tokens, cross_only=True, **kwargs)
            return self.task_heads[classification_head_name](extra["cross_states"]), extra
        return self.encoder(src_tokens, features_only, return_all_hiddens, **kwargs)

    def word_embeddings(self) -> nn.Embedding:
        return self.encoder.sentence_encoder.embed_tokens

    def task_head_container(self) -> TaskHeads:
        return self.task_heads

    def special_tokens(self) -> Tuple[int, bool]:
        """N special tokens per sequence, and whether one embedding serves them all."""
        return self.args.num_special_tokens, self.args.shared_special_embedding

    def sequence_embeddings(self, src_tokens: torch.Tensor) -> torch.Tensor:
        """(B, M, L) word ids -> (B, M, N, d) each sequence's special-token states E (Eq. 1-2)."""
        _, _, embeddings = self.encoder.encode_sequences(src_tokens, specials_only=True)
        return embeddings

    def rank(self, question_embeddings: torch.Tensor, candidate_embeddings: torch.Tensor) -> torch.Tensor:
        """(Q, N, d), (C, N, d) embeddings -> (Q, C) alpha of Eq. 7 (``CrossThoughtEncoder.rank``)."""
        return self.encoder.rank(question_embeddings, candidate_embeddings)

    def upgrade_state_dict_named(self, state_dict, name):
        """RoBERTa's upgrade, then ``TaskHeads.restore`` of the task heads. A
        checkpoint from before 0.3.0 kept the pair classifiers in
        ``classification_heads``: they move to ``task_heads`` first."""
        prefix = name + "." if name else ""
        roberta_heads = prefix + "classification_heads."
        TaskHeads.move_heads(state_dict, roberta_heads, prefix + "task_heads.",
                             TaskHeads.saved_names(state_dict, roberta_heads))
        super().upgrade_state_dict_named(state_dict, name)
        self.task_heads.restore(state_dict, prefix + "task_heads.")

    def max_positions(self):
        """The longest short sequence, in words: --max-positions minus the N
        special tokens. fairseq checks each sequence of a sample against it
        (``CrossThoughtTask.filter_indices_by_size``), never a sample's total."""
        return self.args.max_positions - self.args.num_special_tokens


def cross_thought_defaults(args) -> None:
    """The paper's settings, then RoBERTa's base architecture."""
    set_defaults(args, num_special_tokens=5, cross_layers=1, pair_pooling="flatten", init_std=BERT_INIT_STD,
                 encoder_chunk_sequences=0, shared_special_embedding=False, share_cross_layers=False,
                 cross_mask_self=False, no_cross_layer=False, fixed_word_positions=False,
                 # the paper draws 64 word positions from 0..564 for 5 special tokens
                 max_positions=640)
    base_architecture(args)


def narrow_init_std(args) -> float:
    """1 / sqrt(width), as in Xavier's scale: BERT's 0.02 suits width 768; at width 64 it leaves the
    cross-sequence route (word -> special state -> other sequence -> masked word) too weak to start learning."""
    return args.encoder_embed_dim ** -0.5


CROSS_THOUGHT_PRESETS = {"base": {}, "tiny": dict(TINY_ENCODER, max_positions=128, init_std=narrow_init_std)}
register_presets("cross_thought", CROSS_THOUGHT_PRESETS, cross_thought_defaults)


__all__ = ["CrossThoughtEncoder", "CrossThoughtModel", "PairClassificationHead"]
