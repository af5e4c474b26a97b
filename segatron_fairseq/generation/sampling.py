"""Sampling from a Segatron-XL / Transformer-XL language model.

The prompt is fed as a stream (``</s>`` first, then its tokens with their
sentence / paragraph starts); every new token is drawn from the model's
distribution after the last one (temperature, then top-k and top-p), and its
starts come from ``flags_of`` (``segatron_preprocess.generation_indexer.
GenerationIndexer.push``: the binarizer's rules for a token that arrives
alone). The window a query sees is capped at ``max_keys`` positions (the
training memory plus segment length), dropping the oldest.

``incremental=True`` reads the prompt in one forward
(``SegatronXLDecoder.prime_decoding``), then decodes with cached keys and
values (one query per new token, ``decode_step``); ``False`` recomputes a full
forward over the window for every token (the slow reference; the same tokens
as long as the window is not capped).
"""
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor


def next_token(lprobs: Tensor, topk: int, topp: float, temperature: float, excluded: Sequence[int],
               generator: Optional[torch.Generator]) -> int:
    """One token drawn from log-probabilities (V,): temperature, then the
    ``topk`` most likely (0: all), then the smallest set of mass ``topp``."""
    scores = lprobs.float() / max(temperature, 1e-6)
    scores[list(excluded)] = float("-inf")
    if topk > 0:
        kth = scores.topk(min(topk, scores.numel())).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = scores.softmax(dim=-1)
    if topp < 1.0:
        ordered, order = probs.sort(descending=True)
        outside = ordered.cumsum(dim=0) - ordered >= topp  # keep up to and including the one that reaches topp
        probs = probs.scatter(0, order, ordered.masked_fill(outside, 0.0))
    if generator is not None:  # drawn where the generator lives: a seed gives the same tokens on CPU and GPU
        probs = probs.to(generator.device)
    return int(torch.multinomial(probs, 1, generator=generator))


def _starts(parts: Sequence[str], sentence: bool, paragraph: bool, device) -> dict:
    flags = {"sentence": sentence, "paragraph": paragraph}
    return {part: torch.tensor([flags[part]], device=device) for part in parts}


@torch.no_grad()
def sample_tokens(model, prompt: Sequence[int], prompt_starts: Sequence[Tuple[bool, bool]], max_len: int,
                  flags_of: Callable[[int], Tuple[bool, bool]], max_keys: int, topk: int = 0, topp: float = 1.0,
                  temperature: float = 1.0, generator: Optional[torch.Generator] = None,
                  incremental: bool = True) -> List[int]:
    """``max_len`` new tokens after ``prompt`` (ids, and (sentence, paragraph)
    starts of each). The model's evaluation memory is reset before and after."""
    model.eval()
    device = next(model.parameters()).device
    parts, excluded = model.segment_parts(), model.never_generated()
    inputs = [model.eos()] + list(prompt)
    starts = [(True, True)] + list(prompt_starts)
    model.reset_memory(training=False)
    try:
        generated, cache = [], None
        for _ in range(max_len):
            window = slice(max(0, len(inputs) - max_keys), len(inputs))
            if incremental and cache is not None:
                cache.keep_last(max_keys - 1)
                features = model.decode_step(torch.tensor([inputs[-1]], device=device),
                                             _starts(parts, *starts[-1], device), cache)[0]
            else:
                source = (torch.tensor([inputs[window]], device=device),
                          torch.tensor([[s for s, _ in starts[window]]], device=device),
                          torch.tensor([[p for _, p in starts[window]]], device=device))
                if incremental:  # the prompt, in one forward
                    features, cache = model.prime_decoding(*source)
                    features = features[0]
                else:
                    model.reset_memory(training=False)
                    features = model.last_features(*source)[0]
            output = model.output_layer(features[None, None])  # logits, or features for the adaptive softmax
            lprobs = model.get_normalized_probs((output, None), log_probs=True)[0, 0]
            token = next_token(lprobs, topk, topp, temperature, excluded, generator)
            generated.append(token)
            inputs.append(token)
            starts.append(flags_of(token))
    finally:
        model.reset_memory(training=False)
    return generated
