"""Cloze scores of a cloze two-tower checkpoint from raw text.

    from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerModel
    cloze = ClozeTwoTowerModel.from_pretrained("checkpoints/cloze", "checkpoint_best.pt", "data-bin/wikitext")
    cloze.token_log_probs("The crab lives near the reef .")   # [(token, log p(token | all the others)), ...]
    cloze.pseudo_perplexity("The crab lives near the reef .")

``encode`` lays a text out as a pre-training block (``data.cloze_blocks``):
its tokens as the corpus's binarizer makes them (``</s>`` left out), between
two ``<s>``, with their indexes. One forward pass scores every token: the
combination block predicts token i from all the others and never from token
i itself (always with the pre-training mask ``full``, whatever mask the
checkpoint was saved with), so the pseudo-perplexity, exp of the negated mean
of these log-probabilities, needs no pass per token as a masked LM's does.
"""
import math
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

from segatron_fairseq.data.cloze_blocks import block_layout
from segatron_fairseq.hub.checkpoints import PretrainedHub
from segatron_fairseq.segments import TABLE_SIZES
from segatron_preprocess.text_encoder import TextEncoder


class ClozeTwoTowerHubInterface(PretrainedHub, nn.Module):
    MODEL = "cloze_two_tower"

    def __init__(self, cfg, task, model, corpus: str):
        super().__init__()
        self.cfg, self.task, self.model = cfg, task, model
        self.model.eval()
        self.dictionary = task.source_dictionary
        self.text_encoder = TextEncoder(corpus, self.dictionary)
        self.max_positions = model.max_positions()
        tables = model.index_tables()  # none without --segment-positions
        self.index_limits = {name: tables[name].num_embeddings if name in tables else TABLE_SIZES[name]
                             for name in ("paragraph", "sentence")}
        self.index_limits["token"] = self.max_positions
        self.register_buffer("_float_tensor", torch.tensor([0], dtype=torch.float), persistent=False)

    @property
    def device(self):
        return self._float_tensor.device

    def encode(self, text: str, input_format: Optional[str] = None) -> Dict[str, torch.Tensor]:
        """The model's input for ``text`` (read as the corpus's format, or
        ``input_format``: wikitext or lines): ``src_tokens`` and the three
        indexes, (1, T) each."""
        encoded = self.text_encoder.encode(text, input_format)
        keep = encoded.tokens != self.dictionary.eos()
        if not keep.any():
            raise ValueError("the text holds no words")
        if keep.sum() + 2 > self.max_positions:
            raise ValueError(f"the text has {int(keep.sum())} tokens; the model reads at most "
                             f"{self.max_positions - 2} (with the two <s>)")
        indexes = {name: getattr(encoded, f"{name}_index")[keep] for name in ("paragraph", "sentence", "token")}
        layout = block_layout(encoded.tokens[keep], indexes, self.dictionary.bos(), self.index_limits)
        columns = {"src_tokens": layout.tokens, **{f"{name}_index": v for name, v in layout.indexes.items()}}
        return {key: torch.as_tensor(value, dtype=torch.long)[None].to(self.device) for key, value in columns.items()}

    @torch.no_grad()
    def token_log_probs(self, text: str, input_format: Optional[str] = None) -> List[Tuple[str, float]]:
        """Each token of ``text`` with its cloze log-probability (natural log)
        given every other token of the text."""
        encoded = self.encode(text, input_format)
        saved = self.model.combination_mask
        self.model.set_combination_mask("full")
        try:
            features = self.model(**encoded)["cloze"]
        finally:
            self.model.set_combination_mask(saved)
        src = encoded["src_tokens"]
        scores = self.model.log_probs(features, src)[0, 1:-1]
        return [(self.dictionary[int(t)], float(s)) for t, s in zip(src[0, 1:-1], scores)]

    def pseudo_perplexity(self, text: str, input_format: Optional[str] = None) -> float:
        """exp(-mean cloze log-probability) of the tokens of ``text``."""
        scores = [score for _, score in self.token_log_probs(text, input_format)]
        return math.exp(-sum(scores) / len(scores))
