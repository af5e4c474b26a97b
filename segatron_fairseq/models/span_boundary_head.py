"""SpanBERT's span boundary objective (pre-training, task option
``--span-boundary-objective``): each masked word predicted from its span's
boundary states, (N, d) x 2 and (N,) offsets -> (N, V) word logits."""
import torch
import torch.nn.functional as F
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from torch import nn

from segatron_fairseq.data.span_masking import MAX_SPAN_TARGETS


class SpanBoundaryHead(nn.Module):
    """SpanBERT's span boundary objective: a masked token x_i of span s..e is
    predicted from its span's outer boundary states x_{s-1}, x_{e+1} and a
    learned embedding p_i of its offset i - s (``MAX_SPAN_TARGETS`` offsets,
    200 wide, as SpanBERT's code):
    h = LN(GeLU(W1 [x_{s-1}; x_{e+1}; p_i])), y = LN(GeLU(W2 h)) (d -> d -> E),
    logits = y E_word^T + b, with the encoder's word embeddings E_word (V, E)
    given at each call (tied; E is the embedding width, d the hidden size)."""

    OFFSET_DIM = 200

    def __init__(self, hidden_dim: int, embed_dim: int, vocab_size: int, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.offset_embeddings = nn.Embedding(MAX_SPAN_TARGETS, self.OFFSET_DIM)
        self.hidden = nn.Linear(2 * hidden_dim + self.OFFSET_DIM, hidden_dim)
        self.hidden_norm = nn.LayerNorm(hidden_dim, eps=layer_norm_eps)
        self.output = nn.Linear(hidden_dim, embed_dim)
        self.output_norm = nn.LayerNorm(embed_dim, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.apply(init_bert_params)

    def forward(self, left: torch.Tensor, right: torch.Tensor, offsets: torch.Tensor,
                word_embeddings: torch.Tensor) -> torch.Tensor:
        x = torch.cat([left, right, self.offset_embeddings(offsets)], dim=-1)
        x = self.hidden_norm(F.gelu(self.hidden(x)))
        x = self.output_norm(F.gelu(self.output(x)))
        return F.linear(x, word_embeddings, self.bias)
