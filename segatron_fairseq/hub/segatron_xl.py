"""Score raw text with a Segatron-XL (or Transformer-XL) checkpoint.

    from segatron_fairseq.models.segatron_xl import SegatronXLModel
    lm = SegatronXLModel.from_pretrained("checkpoints", "checkpoint_best.pt", "data-bin/wikitext-103")
    result = lm.score(" = Title = \\n \\n Some text . More text . \\n")
    result["positional_scores"]   # (N,) log-probability of each token, in nats
    result["ppl"]                 # the perplexity over those N tokens

The text is turned into tokens and sentence / paragraph starts exactly as
``segatron-preprocess`` binarized the training corpus (``data_name_or_path``:
its splitter, sub-word model, dictionary and stream style; see
``segatron_preprocess.text_encoder``), then scored as one stream, in segments
of the training ``--tgt-len`` with memory, every token once: the numbers
``fairseq-eval-lm --batch-size 1`` reports for the same text binarized. Each
call starts from an empty memory.
"""
import copy
import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Union

import torch
from fairseq import utils
from omegaconf import open_dict
from torch import nn

from segatron_fairseq.evaluation.token_losses import stream_inputs, stream_losses
from segatron_fairseq.generation.sampling import sample_tokens
from segatron_fairseq.hub.checkpoints import LoadedCheckpoint, PretrainedHub
from segatron_preprocess.text_encoder import EncodedText, TextEncoder


class SegatronXLHubInterface(PretrainedHub, nn.Module):
    MODEL = "segatron_xl"

    @classmethod
    def from_loaded(cls, loaded: LoadedCheckpoint) -> "SegatronXLHubInterface":
        """The interface of a loaded checkpoint (the corpus is the task's data)."""
        return cls(loaded.cfg, loaded.task, loaded.model)

    def __init__(self, cfg, task, model):
        super().__init__()
        self.cfg, self.task, self.model = cfg, task, model
        self.model.eval()
        self.encoder = TextEncoder(task.cfg.data, task.dictionary)

    def encode(self, text: str, input_format: Optional[str] = None) -> EncodedText:
        """Tokens and segment starts of ``text`` (a file's content in the corpus's format)."""
        return self.encoder.encode(text, input_format)

    def score(self, text: str, input_format: Optional[str] = None, tgt_len: Optional[int] = None) -> Dict:
        """``tokens`` (N,), ``positional_scores`` (N,) log-probabilities in nats,
        ``loss`` (mean negative log-probability, nats) and ``ppl`` of ``text``."""
        encoded = self.encode(text, input_format)
        losses = stream_losses(self.model, encoded.tokens, encoded.sentence_starts, encoded.paragraph_starts,
                               tgt_len or self.task.cfg.tgt_len)
        loss = float(losses.mean())
        return {"tokens": torch.from_numpy(encoded.tokens), "positional_scores": torch.from_numpy(-losses),
                "loss": loss, "ppl": math.exp(loss)}

    def _prompt(self, prompt: str, input_format: Optional[str]) -> EncodedText:
        """The prompt's items, up to the last token that is read: a prompt that
        ends with a newline ends its paragraph (its ``</s>`` is kept);
        otherwise the text goes on in its last paragraph."""
        encoded = self.encode(prompt, input_format)
        keep = len(encoded.tokens) if prompt.endswith("\n") else len(encoded.tokens) - 1
        return EncodedText(*(getattr(encoded, f.name)[:keep] for f in dataclasses.fields(EncodedText)))

    def sample_tokens(self, prompt: str, max_len: int = 100, topk: int = 0, topp: float = 1.0,
                      temperature: float = 1.0, seed: Optional[int] = None, incremental: bool = True,
                      input_format: Optional[str] = None) -> List[int]:
        """The ids of ``max_len`` tokens sampled after ``prompt`` (see
        ``_prompt``), whose tokens keep the starts the binarizer gives them.
        ``seed`` makes the draw reproducible; ``incremental=False`` recomputes
        the window every token."""
        encoded = self._prompt(prompt, input_format)
        indexer = self.encoder.generation_indexer()
        for token in encoded.tokens:
            indexer.push(int(token))
        starts = list(zip(encoded.sentence_starts.tolist(), encoded.paragraph_starts.tolist()))
        generator = None if seed is None else torch.Generator().manual_seed(seed)
        return sample_tokens(self.model, encoded.tokens.tolist(), starts, max_len, indexer.push, self._max_keys(),
                             topk, topp, temperature, generator, incremental)

    def _max_keys(self) -> int:
        return self.model.decoding_window(self.task.cfg.tgt_len)

    def generate(self, prompts: Union[str, Sequence[str]], beam: int = 1, seed: Optional[int] = None,
                 input_format: Optional[str] = None, **kwargs) -> List[List[Dict]]:
        """fairseq's ``SequenceGenerator`` over raw-text prompts, as fairseq's
        hub ``generate`` (through ``task.build_generator`` and
        ``inference_step``, like ``fairseq-generate``): beam search, or
        ``sampling=True`` with ``sampling_topk``, ``sampling_topp``,
        ``temperature``; ``max_len_b``, ``min_len``, ``nbest`` and the other
        generation options as keywords. Prompt tokens are forced and flagged
        as they arrive (``GenerationIndexer``). Returns, per prompt, its
        hypotheses: ``tokens`` (prompt, continuation, final ``</s>``),
        ``score`` and ``positional_scores`` (log-probabilities, nats)."""
        single = isinstance(prompts, str)
        tokens = [torch.cat([torch.from_numpy(self._prompt(p, input_format).tokens),
                             torch.tensor([self.task.dictionary.eos()])]) for p in ([prompts] if single else prompts)]
        gen_args = copy.deepcopy(self.cfg.generation)
        with open_dict(gen_args):
            gen_args.beam = beam
            for key, value in kwargs.items():
                setattr(gen_args, key, value)
        generator = self.task.build_generator([self.model], gen_args)
        dataset = self.task.build_dataset_for_inference(tokens, [len(t) for t in tokens])
        device = next(self.model.parameters()).device
        batch = dataset.collater([dataset[i] for i in range(len(dataset))])  # in prompt order
        if device.type == "cuda":
            batch = utils.move_to_cuda(batch, device)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            if seed is not None:
                torch.manual_seed(seed)
            return self.task.inference_step(generator, [self.model], batch)

    def decode(self, tokens: List[int]) -> str:
        """Text of token ids: ``</s>`` ends a line; sentencepiece pieces are joined into words."""
        return self.encoder.decode(tokens)

    def sample(self, prompt: str, max_len: int = 100, topk: int = 0, topp: float = 1.0, temperature: float = 1.0,
               seed: Optional[int] = None) -> str:
        """The text of ``max_len`` tokens sampled after ``prompt`` (see ``sample_tokens``)."""
        return self.decode(self.sample_tokens(prompt, max_len, topk, topp, temperature, seed))

    @torch.no_grad()
    def attention(self, text: str, input_format: Optional[str] = None, max_tokens: Optional[int] = None) -> Dict:
        """The attention of the first ``max_tokens`` (default: the training
        ``--tgt-len``) input positions of ``text`` read as one segment without
        memory: ``symbols`` (the input tokens, the leading ``</s>`` first),
        ``sentence_starts`` / ``paragraph_starts`` (T,) bool, and ``layers``:
        each layer's probabilities (H, T, T), query by key."""
        encoded = self.encode(text, input_format)
        length = min(max_tokens or self.task.cfg.tgt_len, len(encoded.tokens))
        source, sentence, paragraph = (torch.from_numpy(a)[None] for a in stream_inputs(
            encoded.tokens[:length], encoded.sentence_starts[:length], encoded.paragraph_starts[:length],
            self.task.dictionary.eos()))
        device = next(self.model.parameters()).device
        self.model.reset_memory(training=False)
        try:
            _, extra = self.model(source.to(device), sentence_starts=sentence.to(device),
                                  paragraph_starts=paragraph.to(device), features_only=True, need_attn=True)
        finally:
            self.model.reset_memory(training=False)
        return {"symbols": [self.task.dictionary[int(i)] for i in source[0]], "sentence_starts": sentence[0],
                "paragraph_starts": paragraph[0], "layers": [w[0].cpu() for w in extra["attn_layers"]]}
