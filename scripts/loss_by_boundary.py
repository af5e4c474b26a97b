"""Where two Segatron-XL checkpoints differ: mean loss by the kind of target token.

    python scripts/loss_by_boundary.py --data DATA_BIN --split test CHECKPOINT [CHECKPOINT ...]

Each checkpoint scores the split as one stream, segment by segment with its
memory (as ``fairseq-eval-lm --batch-size 1`` does). Target tokens are grouped
by how they relate to segment boundaries: the last token of a sentence (the
next token starts a new sentence), the first token of a sentence, and the rest.
A model that is shown where the coming sentences start (``--segment-distance-origin
window_end``) gains most on the first tokens of sentences: it is told that its
target begins one. The mean over all tokens equals ``fairseq-eval-lm``'s loss.
"""
import argparse
import math

import numpy as np
import torch
from fairseq import checkpoint_utils

from segatron_fairseq.data.segment_indexed_dataset import SegmentIndexedDataset


def read_stream(prefix: str):
    """Tokens of the split in order, and whether each one starts a sentence / paragraph."""
    corpus = SegmentIndexedDataset(prefix)
    tokens = corpus.token_array().astype(np.int64)
    sentence_start = corpus.index_array("token") == 0
    return tokens, sentence_start, sentence_start & (corpus.index_array("sentence") == 0)


def token_losses(checkpoint: str, tokens, sentence_start, paragraph_start, tgt_len: int) -> np.ndarray:
    """Loss in nats of every token of the stream, given all the tokens before it."""
    models, _ = checkpoint_utils.load_model_ensemble([checkpoint])
    model = models[0].eval()
    eos = model.decoder.dictionary.eos()
    source = np.concatenate([[eos], tokens[:-1]])
    # the input at position t is token t-1; its flags are those of token t-1 (the leading eos starts both)
    source_sentence = np.concatenate([[True], sentence_start[:-1]])
    source_paragraph = np.concatenate([[True], paragraph_start[:-1]])
    losses = []
    with torch.no_grad():
        for start in range(0, len(tokens), tgt_len):
            cols = slice(start, start + tgt_len)
            features, _ = model(torch.from_numpy(source[cols])[None],
                                sentence_starts=torch.from_numpy(source_sentence[cols])[None],
                                paragraph_starts=torch.from_numpy(source_paragraph[cols])[None])
            target = torch.from_numpy(tokens[cols])[None]
            lprobs = model.get_normalized_probs((features, None), log_probs=True, sample={"target": target})
            losses.append(-lprobs.gather(-1, target[..., None])[0, :, 0].double().numpy())
    return np.concatenate(losses)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--data", required=True, help="segatron-preprocess directory")
    p.add_argument("--split", default="test")
    p.add_argument("--tgt-len", type=int, default=64)
    args = p.parse_args()
    tokens, sentence_start, paragraph_start = read_stream(f"{args.data}/{args.split}")
    next_starts_sentence = np.concatenate([sentence_start[1:], [True]])
    groups = {
        "last of a sentence": next_starts_sentence,
        "first of a sentence": sentence_start & ~next_starts_sentence,
        "other": ~sentence_start & ~next_starts_sentence,
        "all": np.ones_like(sentence_start),
    }
    print(f"{args.split}: {len(tokens):,} tokens; ppl by group (tokens)")
    print(f"{'checkpoint':<50}" + "".join(f"{name:>24}" for name in groups))
    print(f"{'':<50}" + "".join(f"{int(mask.sum()):>24,}" for mask in groups.values()))
    for checkpoint in args.checkpoints:
        losses = token_losses(checkpoint, tokens, sentence_start, paragraph_start, args.tgt_len)
        row = "".join(f"{math.exp(losses[mask].mean()):>24.2f}" for mask in groups.values())
        print(f"{checkpoint[-50:]:<50}{row}", flush=True)


if __name__ == "__main__":
    main()
