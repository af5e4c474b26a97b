"""Sentence embeddings and ranking from a Cross-Thought checkpoint.

    from segatron_fairseq.models.cross_thought import CrossThoughtModel
    hub = CrossThoughtModel.from_pretrained("checkpoints/cross_thought", "checkpoint_best.pt",
                                            "data-bin/wikipedia")
    hub.encode(["A text.", "Another text."])      # (2, N, d) special-token states
    hub.rank("a question", ["passage", ...])      # (len(passages),) alpha of Eq. 7

Raw text is tokenized as the pre-training corpus was (its ``sentencepiece.model``,
else its dictionary's words; ``data_name_or_path`` is that corpus), each text
is one short sequence cut to ``max_length`` tokens, and the model runs in
evaluation mode (words at positions N.., as the fine-tuning tasks encode them).
"""
from typing import List, Optional, Sequence

import torch
from torch import nn

from segatron_fairseq.data.text_encoder import text_encoder
from segatron_fairseq.hub.checkpoints import PretrainedHub


class CrossThoughtHubInterface(PretrainedHub, nn.Module):
    MODEL = "cross_thought"

    def __init__(self, cfg, task, model, corpus: str):
        super().__init__()
        self.cfg, self.task, self.model = cfg, task, model
        self.model.eval()
        self.tokenize = text_encoder(corpus, task.dictionary)
        self.max_length = model.max_positions()
        self.register_buffer("_float_tensor", torch.tensor([0], dtype=torch.float), persistent=False)

    @property
    def device(self):
        return self._float_tensor.device

    def _token_ids(self, text: str, max_length: int) -> List[int]:
        if not isinstance(text, str):
            raise TypeError(f"a text must be a string, not {type(text).__name__}")
        return self.tokenize(text)[:max_length] or [self.task.dictionary.unk()]

    @torch.no_grad()
    def encode(self, texts: Sequence[str], max_length: Optional[int] = None, batch_size: int = 64) -> torch.Tensor:
        """(len(texts), N, d) float32 sequence embeddings, each text a short
        sequence of its own, ``batch_size`` sequences per forward pass."""
        if isinstance(texts, str):
            texts = [texts]
        max_length = min(max_length or self.max_length, self.max_length)
        pad = self.task.dictionary.pad()
        out = []
        for start in range(0, len(texts), batch_size):
            chunk = [self._token_ids(t, max_length) for t in texts[start:start + batch_size]]
            tokens = torch.full((len(chunk), 1, max(len(c) for c in chunk)), pad, dtype=torch.long)
            for b, ids in enumerate(chunk):
                tokens[b, 0, : len(ids)] = torch.tensor(ids)
            embeddings = self.model.sequence_embeddings(tokens.to(self.device))
            out.append(embeddings[:, 0].float().cpu())
        if not out:
            raise ValueError("no texts to encode")
        return torch.cat(out)

    @torch.no_grad()
    def rank_embeddings(self, question: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """alpha[0][1:] of Eq. 7 from embeddings: question (N, d) or (Q, N, d),
        candidates (C, N, d) -> (C,) or (Q, C)."""
        single = question.dim() == 2
        dtype = next(self.model.parameters()).dtype
        scores = self.model.rank(question.reshape(-1, *candidates.shape[1:]).to(self.device, dtype),
                                         candidates.to(self.device, dtype)).float().cpu()
        return scores[0] if single else scores

    def rank(self, question: str, passages: Sequence[str], max_length: Optional[int] = None) -> torch.Tensor:
        """The pre-trained cross-sequence attention of ``question`` over
        ``passages`` (the paper's ranking without fine-tuning): (len(passages),)."""
        return self.rank_embeddings(self.encode([question], max_length)[0], self.encode(passages, max_length))
