"""Where two Segatron-XL checkpoints differ: mean loss by the kind of target token.

    segatron-loss-by-boundary --data DATA_BIN --split test CHECKPOINT [CHECKPOINT ...]

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

from segatron_fairseq.evaluation.token_losses import read_stream, token_losses


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-loss-by-boundary", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("checkpoints", nargs="+", help="segatron_xl checkpoints")
    p.add_argument("--data", required=True, help="segatron-preprocess directory")
    p.add_argument("--split", default="test", help="the split scored")
    p.add_argument("--tgt-len", type=int, default=64, help="tokens per segment")
    args = p.parse_args(argv)
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
    cli_main()
