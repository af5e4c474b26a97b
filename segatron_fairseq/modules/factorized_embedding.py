"""A factorized input embedding (ALBERT, also ELECTRA's embedding projection):
the embedding tables are E wide, their sum goes through the embedding
LayerNorm and dropout at width E, and one linear map takes it to the
encoder's width H before the first layer. The masked-LM head goes back to
E before its decoder, which is the (V, E) word table::

    ids (B, T) -> word + positions / indexes (B, T, E) -> LayerNorm, dropout
               -> embedding_projection (B, T, H) -> layers (B, T, H)
    LM head:  (B, T, H) -> dense (H -> E), activation, LayerNorm (E) -> (.) @ word_table.T + bias -> (B, T, V)

With E = H there is no projection and both classes are fairseq's own.
"""
from typing import Optional

import torch
from fairseq.models.roberta.model import RobertaLMHead
from fairseq.models.transformer import TransformerEncoder
from fairseq.modules import LayerNorm
from torch import nn


class FactorizedTransformerEncoder(TransformerEncoder):
    """fairseq's ``TransformerEncoder`` over ``embed_tokens`` of width E
    (positions and the embedding LayerNorm at E too), projected to the
    layers' width ``cfg.encoder.embed_dim`` when E differs from it."""

    def __init__(self, args, dictionary, embed_tokens: nn.Embedding):
        super().__init__(args, dictionary, embed_tokens)
        embedding_dim, hidden_dim = embed_tokens.embedding_dim, args.encoder_embed_dim
        self.embedding_projection = (nn.Linear(embedding_dim, hidden_dim) if embedding_dim != hidden_dim
                                     else None)
        if self.layer_norm is not None and embedding_dim != hidden_dim:  # a pre-norm encoder's last LayerNorm
            self.layer_norm = LayerNorm(hidden_dim, export=self.cfg.export)

    def forward_embedding(self, src_tokens, token_embedding: Optional[torch.Tensor] = None):
        """(B, T) ids (and the (B, T, E) summed embeddings) -> ((B, T, H) input
        of the first layer, (B, T, E) scaled token embedding)."""
        x, embed = super().forward_embedding(src_tokens, token_embedding)
        if self.embedding_projection is not None:
            x = self.embedding_projection(x)
        return x, embed


class FactorizedLMHead(RobertaLMHead):
    """RoBERTa's masked-LM head whose dense layer maps the encoder's width
    ``hidden_dim`` to the word table's ``embedding_dim`` (the LayerNorm and
    the tied (V, E) decoder are at E)."""

    def __init__(self, hidden_dim: int, embedding_dim: int, output_dim: int, activation_fn: str,
                 weight: Optional[torch.Tensor] = None):
        super().__init__(embedding_dim, output_dim, activation_fn, weight)
        self.dense = nn.Linear(hidden_dim, embedding_dim)
