"""SegaBERT for Hugging Face transformers (remote code of a ``segatron-export``
directory): BERT's encoder and MLM head; the input embedding sums the word,
token-type, paragraph-index, sentence-index and token-index embeddings
(Segatron, Figure 1b), then LayerNorm and dropout.

Inputs are (B, T): ``input_ids``, ``attention_mask``, ``token_type_ids``, and
``paragraph_index``, ``sentence_index``, ``token_index`` (paragraph in the
document, sentence in the paragraph, token in the sentence, from 0; missing
ones are 0). Compute them with segatron-fairseq's ``SegaBERTModel.encode``,
which lays text out as pre-training did.
"""
import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput
from transformers.models.bert.modeling_bert import BertEncoder, BertOnlyMLMHead, BertPreTrainedModel

from .configuration_segabert import SegaBertConfig

INDEX_NAMES = ("paragraph", "sentence", "token")


class SegaBertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.index_embeddings = nn.ModuleDict({
            name: nn.Embedding(getattr(config, f"max_{name}_index"), config.hidden_size) for name in INDEX_NAMES})
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, indexes=None):
        zeros = torch.zeros_like(input_ids)
        embedding = self.word_embeddings(input_ids)
        embedding = embedding + self.token_type_embeddings(zeros if token_type_ids is None else token_type_ids)
        for name, table in self.index_embeddings.items():
            index = (indexes or {}).get(name)
            embedding = embedding + table(zeros if index is None else index)
        return self.dropout(self.LayerNorm(embedding))


class SegaBertPreTrainedModel(BertPreTrainedModel):
    config_class = SegaBertConfig
    base_model_prefix = "segabert"


class SegaBertModel(SegaBertPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embeddings = SegaBertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, paragraph_index=None,
                sentence_index=None, token_index=None, output_hidden_states=None, return_dict=True):
        """(B, T) inputs -> ``last_hidden_state`` (B, T, d)."""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id).long()
        indexes = {"paragraph": paragraph_index, "sentence": sentence_index, "token": token_index}
        hidden = self.embeddings(input_ids, token_type_ids, indexes)
        # (B, 1, 1, T) added to the scores: 0 for tokens, the dtype's minimum for padding (what BERT's layers take
        # in transformers 4 and 5 alike)
        extended_mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        encoded = self.encoder(hidden, attention_mask=extended_mask, output_hidden_states=output_hidden_states,
                               return_dict=True)
        return BaseModelOutput(last_hidden_state=encoded.last_hidden_state, hidden_states=encoded.hidden_states)


class SegaBertForMaskedLM(SegaBertPreTrainedModel):
    # target -> source (transformers 5 needs the mapping; 4.35 reads its keys)
    _tied_weights_keys = {"cls.predictions.decoder.weight": "segabert.embeddings.word_embeddings.weight",
                          "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def __init__(self, config):
        super().__init__(config)
        self.segabert = SegaBertModel(config)
        self.cls = BertOnlyMLMHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.decoder = new_embeddings

    def forward(self, input_ids, labels=None, **inputs):
        """``logits`` (B, T, V); with ``labels`` (-100: not scored) also the loss."""
        hidden = self.segabert(input_ids, **inputs).last_hidden_state
        logits = self.cls(hidden)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return MaskedLMOutput(loss=loss, logits=logits)
