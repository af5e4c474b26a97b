"""Features, masked-word predictions and fine-tuned predictions of a SegaBERT
(or BERT-baseline) checkpoint from raw text.

    from segatron_fairseq.models.segabert import SegaBERTModel
    bert = SegaBERTModel.from_pretrained("checkpoints/segabert", "checkpoint_best.pt", "data-bin/wikipedia")
    x = bert.encode("First sentence . Second one .\\nA new paragraph .")   # the indexes of that text
    bert.extract_features(x)                    # (1, T, d); return_all_hiddens=True: every layer
    bert.fill_mask("The crab lives near the <mask> .", topk=3)
    bert.predict("sentence_classification_head", bert.encode("A text .", "Another text ."))

``encode`` lays a text out as pre-training does: its words tokenized, split
into sentences and paragraphs (one per line) by the corpus's own binarizer
path (``segatron_preprocess.text_encoder``), ``</s>`` left out, [CLS] and
[SEP] with their neighbours' indexes, indexes above a table fitted by the
paper's rule (``segatron_fairseq.segments``). A pair is laid out as fine-tuning does
(``segments.layout_of_paragraphs``): first text paragraph 0,
second paragraph 1.
"""
from typing import Dict, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn

from segatron_fairseq.hub.checkpoints import PretrainedHub
from segatron_fairseq.segments import MASK_SYMBOL, TABLE_SIZES, layout_of_paragraphs, layout_of_run
from segatron_preprocess.text_encoder import TextEncoder


class SegaBERTHubInterface(PretrainedHub, nn.Module):
    MODEL = "segabert"

    def __init__(self, cfg, task, model, corpus: str):
        super().__init__()
        self.cfg, self.task, self.model = cfg, task, model
        self.model.eval()
        self.dictionary = task.source_dictionary
        self.text_encoder = TextEncoder(corpus, self.dictionary, keep=(MASK_SYMBOL,))
        self.max_positions = model.max_positions()
        tables = model.index_tables()  # none in BERT, which reads no index
        self.table_sizes = {name: tables[name].num_embeddings if name in tables else size
                            for name, size in TABLE_SIZES.items()}
        self.register_buffer("_float_tensor", torch.tensor([0], dtype=torch.float), persistent=False)

    @property
    def device(self):
        return self._float_tensor.device

    def _single(self, text: str) -> Dict[str, np.ndarray]:
        encoded = self.text_encoder.encode(text, "lines")
        indexes = {"paragraph": encoded.paragraph_index, "sentence": encoded.sentence_index,
                   "token": encoded.token_index}
        layout = layout_of_run(encoded.tokens, indexes, self.dictionary.bos(), self.dictionary.eos(),
                               self.max_positions, self.table_sizes)
        return {"src_tokens": layout.tokens, **{f"{name}_index": values for name, values in layout.indexes.items()}}

    def _pair(self, text_a: str, text_b: str) -> Dict[str, np.ndarray]:
        texts = [self.text_encoder.encode(t, "lines").tokens for t in (text_a, text_b)]
        texts = [t[t != self.dictionary.eos()] for t in texts]
        tokens, paragraph, sentence, token = layout_of_paragraphs(texts, self.dictionary.bos(), self.dictionary.eos(),
                                                                  self.max_positions, self.table_sizes["token"])
        return {"src_tokens": tokens, "paragraph_index": paragraph, "sentence_index": sentence,
                "token_index": token, "token_type": paragraph}

    def encode(self, text: str, text_b: Optional[str] = None) -> Dict[str, torch.Tensor]:
        """The model's input for one text (lines are paragraphs) or a pair:
        ``src_tokens``, the three indexes and, for a pair, ``token_type``, each (1, T)."""
        if not text.strip() or (text_b is not None and not text_b.strip()):
            raise ValueError("encode needs non-empty text")
        layout = self._single(text) if text_b is None else self._pair(text, text_b)
        return {key: torch.as_tensor(np.asarray(value), dtype=torch.long)[None].to(self.device)
                for key, value in layout.items()}

    @torch.no_grad()
    def extract_features(self, encoded: Dict[str, torch.Tensor],
                         return_all_hiddens: bool = False) -> Union[torch.Tensor, List[torch.Tensor]]:
        """(1, T, d) states of the last layer, or a list of (1, T, d): the
        embedding output, then each layer."""
        features, extra = self.model(**encoded, features_only=True, return_all_hiddens=return_all_hiddens)
        if return_all_hiddens:
            return [state.transpose(0, 1) for state in extra["inner_states"]]
        return features

    @torch.no_grad()
    def fill_mask(self, masked_text: str, topk: int = 5) -> List[Tuple[str, float, str]]:
        """The ``topk`` fillings of the single ``<mask>`` of ``masked_text``:
        (filled text, probability, predicted symbol). The text holds the
        symbol without its sub-word marker: on a sentencepiece corpus
        ``"lives <mask> the fjord"`` -> (``"lives in the fjord"``, 0.31, ``"\u2581in"``)."""
        if masked_text.count(MASK_SYMBOL) != 1:
            raise ValueError(f"fill_mask needs exactly one {MASK_SYMBOL} in the text")
        if not self.model.has_masked_lm_head():
            raise ValueError("fill_mask needs a masked-LM head, and this model has none (an ELECTRA checkpoint is "
                             "served as its discriminator: use extract_features or a classification head)")
        encoded = self.encode(masked_text)
        mask_idx = self.dictionary.index(MASK_SYMBOL)
        position = int((encoded["src_tokens"][0] == mask_idx).nonzero()[0])
        logits, _ = self.model(**encoded)
        probs = logits[0, position].float().softmax(dim=-1)
        values, indices = probs.topk(topk)
        return [(masked_text.replace(MASK_SYMBOL, self.text_encoder.symbol_text(int(i)), 1), float(v),
                 self.dictionary[int(i)]) for v, i in zip(values, indices)]

    @torch.no_grad()
    def predict(self, head: str, encoded: Dict[str, torch.Tensor], return_logits: bool = False) -> torch.Tensor:
        """(1, C) log-probabilities (or logits) of classification head ``head``."""
        if head not in self.model.head_names():
            raise KeyError(f"the model has no classification head {head!r}; it has {self.model.head_names()}")
        logits, _ = self.model(**encoded, features_only=True, classification_head_name=head)
        return logits if return_logits else logits.float().log_softmax(dim=-1)
