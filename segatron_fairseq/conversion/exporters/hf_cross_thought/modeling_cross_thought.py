"""Cross-Thought for Hugging Face transformers (remote code of a
``segatron-export`` directory), built from BERT's layers.

``input_ids`` (B, M, L): M short sequences per sample, padded with the pad id;
a sequence of only padding is missing. Each sequence gets N special tokens in
front (embeddings S, positions 0..N-1; its words take positions N..N+L-1) and
goes through the encoder (Eq. 1-2); the N special states E (B, M, N, d) are
the sequence embeddings. For each special index n a cross-sequence Transformer
runs over the M sequences' states (Eq. 4-7); its outputs C replace the special
states, one more layer reads each sequence (Eq. 8) and the MLM head predicts
words (Eq. 9). ``encode`` returns C (or E with ``cross=False``).
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn
from transformers.modeling_outputs import MaskedLMOutput
from transformers.models.bert.modeling_bert import BertEncoder, BertLayer, BertOnlyMLMHead, BertPreTrainedModel
from transformers.utils import ModelOutput

from .configuration_cross_thought import CrossThoughtConfig


def _run_layer(layer, hidden, mask):
    """BERT's layer on (S, K, d) with an additive mask: transformers 4 returns a tuple, 5 the tensor."""
    output = layer(hidden, attention_mask=mask)
    return output[0] if isinstance(output, tuple) else output


@dataclass
class CrossThoughtModelOutput(ModelOutput):
    """``sequence_embeddings`` first: feature extraction returns the first field."""

    sequence_embeddings: Optional[torch.FloatTensor] = None
    last_hidden_state: Optional[torch.FloatTensor] = None


class CrossThoughtPreTrainedModel(BertPreTrainedModel):
    config_class = CrossThoughtConfig
    base_model_prefix = "cross_thought"


class CrossThoughtModel(CrossThoughtPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        n, d = config.num_special_tokens, config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.special_embeddings = nn.Embedding(1 if config.shared_special_embedding else n, d)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, d)
        self.LayerNorm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.encoder = BertEncoder(config)
        groups = 0 if config.no_cross_layer else (1 if config.share_cross_layers else n)
        self.cross_layers = nn.ModuleList(nn.ModuleList(BertLayer(config) for _ in range(config.cross_layers))
                                          for _ in range(groups))
        self.final_layer = BertLayer(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.word_embeddings

    def set_input_embeddings(self, value):
        self.word_embeddings = value

    def _mask(self, keep):
        """(S, K) True where a key is visible -> BERT's additive mask (S, 1, 1, K)."""
        return (1.0 - keep[:, None, None, :].to(self.dtype)) * torch.finfo(self.dtype).min

    def _sequences(self, input_ids):
        """Eq. 1-2: hidden states (B*M, N+L, d) and which of those positions are words or specials."""
        batch, num_sequences, length = input_ids.shape
        n = self.config.num_special_tokens
        words = input_ids.reshape(batch * num_sequences, length)
        special_index = torch.arange(n, device=words.device)
        specials = self.special_embeddings(special_index if self.special_embeddings.num_embeddings > 1
                                           else torch.zeros_like(special_index))
        embedded = torch.cat([specials.expand(words.size(0), -1, -1), self.word_embeddings(words)], dim=1)
        embedded = embedded + self.position_embeddings(torch.arange(n + length, device=words.device))
        keep = torch.cat([torch.ones_like(words[:, :1]).expand(-1, n), words.ne(self.config.pad_token_id)], 1)
        hidden = self.encoder(self.dropout(self.LayerNorm(embedded)), attention_mask=self._mask(keep),
                              return_dict=True).last_hidden_state
        return hidden, keep

    def _cross(self, embeddings, present):
        """Eq. 4-7: E (B, M, N, d), present (B, M) -> C (B, M, N, d)."""
        if len(self.cross_layers) == 0:
            return embeddings
        num_sequences = embeddings.size(1)
        mask = self._mask(present)
        if self.config.cross_mask_self:
            diagonal = torch.eye(num_sequences, dtype=torch.bool, device=embeddings.device)
            mask = mask.masked_fill(diagonal, torch.finfo(self.dtype).min)
        outputs = []
        for n in range(self.config.num_special_tokens):
            states = embeddings[:, :, n]
            for layer in self.cross_layers[0 if len(self.cross_layers) == 1 else n]:
                states = _run_layer(layer, states, mask)
            outputs.append(states)
        return torch.stack(outputs, dim=2)

    def _states(self, input_ids, cross=True):
        """Hidden states (B*M, N+L, d), their visible positions, and the special
        states (B, M, N, d): C, or E with ``cross=False``."""
        batch, num_sequences, _ = input_ids.shape
        hidden, keep = self._sequences(input_ids)
        embeddings = hidden[:, :self.config.num_special_tokens].reshape(batch, num_sequences, -1, hidden.size(-1))
        if cross:
            embeddings = self._cross(embeddings, input_ids.ne(self.config.pad_token_id).any(-1))
        return hidden, keep, embeddings

    def encode(self, input_ids, cross=True):
        """(B, M, L) -> the special-token states (B, M, N, d): after the
        cross-sequence Transformer (C), or before it (E, ``cross=False``)."""
        return self._states(input_ids, cross)[2]

    def forward(self, input_ids, attention_mask=None, return_dict=True, **kwargs):
        """(B, M, L) samples of M sequences, or (B, L) texts each read alone
        (what the tokenizer gives) -> ``sequence_embeddings`` E (B, [M,] N, d),
        the special states of each sequence read alone (Eq. 1-2; the hub's
        ``encode``, what pipeline("feature-extraction") returns), and
        ``last_hidden_state``, the words' final states (B, [M,] L, d) after the
        cross-sequence Transformer (Eq. 8). Padding is the pad id; an
        ``attention_mask`` must hide exactly those positions."""
        texts = input_ids.dim() == 2
        if attention_mask is not None and not torch.equal(attention_mask.eq(0), input_ids.eq(self.config.pad_token_id)):
            raise ValueError("attention_mask must hide exactly the padding (the pad id) of input_ids")
        if texts:
            input_ids = input_ids[:, None]
        batch, num_sequences, length = input_ids.shape
        n = self.config.num_special_tokens
        hidden, keep, _ = self._states(input_ids, cross=False)
        embeddings = hidden[:, :n].reshape(batch, num_sequences, n, -1)
        cross = self._cross(embeddings, input_ids.ne(self.config.pad_token_id).any(-1))
        hidden = torch.cat([cross.reshape(batch * num_sequences, n, -1), hidden[:, n:]], dim=1)
        words = _run_layer(self.final_layer, hidden, self._mask(keep))[:, n:].reshape(batch, num_sequences, length, -1)
        if texts:
            embeddings, words = embeddings[:, 0], words[:, 0]
        output = CrossThoughtModelOutput(sequence_embeddings=embeddings, last_hidden_state=words)
        return output if return_dict else output.to_tuple()


class CrossThoughtForMaskedLM(CrossThoughtPreTrainedModel):
    # target -> source (transformers 5 needs the mapping; 4.35 reads its keys)
    _tied_weights_keys = {"cls.predictions.decoder.weight": "cross_thought.word_embeddings.weight",
                          "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def __init__(self, config):
        super().__init__(config)
        self.cross_thought = CrossThoughtModel(config)
        self.cls = BertOnlyMLMHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.decoder = new_embeddings

    def encode(self, input_ids, cross=True):
        return self.cross_thought.encode(input_ids, cross)

    def forward(self, input_ids, labels=None):
        """``logits`` (B, M, L, V); with ``labels`` (-100: not scored) also the loss."""
        logits = self.cls(self.cross_thought(input_ids).last_hidden_state)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        return MaskedLMOutput(loss=loss, logits=logits)
