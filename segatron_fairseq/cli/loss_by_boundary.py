"""Where two Segatron-XL checkpoints differ: mean loss by the kind of target token.

    segatron-loss-by-boundary --data DATA_BIN --split test CHECKPOINT [CHECKPOINT ...]

Each checkpoint scores the split as one stream, segment by segment with its
memory (as ``fairseq-eval-lm --batch-size 1`` does). Target tokens are grouped
by how they relate to segment boundaries: the last token of a sentence (the
next token starts a new sentence), the first token of a sentence, and the rest.
A model that is shown where the coming sentences start (``--segment-distance-origin
window_end``) gains most on the first tokens of sentences: it is told that its
target begins one. The mean over all tokens equals ``fairseq-eval-lm``'s loss.
The dictionary is ``--data``'s (not the corpus path saved in the checkpoint),
and it must be the one each checkpoint was trained with.
"""
import argparse
import math
import os
from typing import List

import numpy as np

from segatron_fairseq.cli.user_errors import exit_on_user_error, positive_int
from segatron_fairseq.evaluation.token_losses import read_stream, stream_losses


def check_inputs(data: str, checkpoints: List[str]) -> None:
    """``--data`` is a directory and every checkpoint named a file (before the first is scored)."""
    from segatron_fairseq.hub.checkpoints import check_checkpoint_file

    if not os.path.isdir(data):
        raise FileNotFoundError(f"{data}: no such directory (--data)")
    for checkpoint in checkpoints:
        check_checkpoint_file(checkpoint)


def load_model(checkpoint: str, data: str):
    """The Segatron-XL saved in ``checkpoint``, its dictionary read from ``data`` (the option ``--data``)."""
    from segatron_fairseq.hub.checkpoints import load_checkpoint

    return load_checkpoint(checkpoint, "segatron_xl", os.path.abspath(data), corpus_option="--data").model


def checkpoint_losses(checkpoint: str, data: str, tokens: np.ndarray, sentence_start: np.ndarray,
                      paragraph_start: np.ndarray, tgt_len: int) -> np.ndarray:
    """``stream_losses`` of the Segatron-XL saved in ``checkpoint`` (``load_model``)."""
    return stream_losses(load_model(checkpoint, data), tokens, sentence_start, paragraph_start, tgt_len)


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-loss-by-boundary", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("checkpoints", nargs="+", help="segatron_xl checkpoints")
    p.add_argument("--data", required=True, help="segatron-preprocess directory (the checkpoints' dictionary)")
    p.add_argument("--split", default="test", help="the split scored")
    p.add_argument("--tgt-len", type=positive_int, default=64, help="tokens per segment")
    args = p.parse_args(argv)
    with exit_on_user_error(p.prog):
        _report(args)


def _report(args) -> None:
    check_inputs(args.data, args.checkpoints)
    tokens, sentence_start, paragraph_start = read_stream(os.path.join(args.data, args.split))
    next_starts_sentence = np.concatenate([sentence_start[1:], [True]])
    groups = {
        "last of a sentence": next_starts_sentence,
        "first of a sentence": sentence_start & ~next_starts_sentence,
        "other": ~sentence_start & ~next_starts_sentence,
        "all": np.ones_like(sentence_start),
    }
    models = [load_model(checkpoint, args.data) for checkpoint in args.checkpoints]  # each refused before the table
    print(f"{args.split}: {len(tokens):,} tokens; ppl by group (tokens)")
    print(f"{'checkpoint':<50}" + "".join(f"{name:>24}" for name in groups))
    print(f"{'':<50}" + "".join(f"{int(mask.sum()):>24,}" for mask in groups.values()))
    for checkpoint, model in zip(args.checkpoints, models):
        losses = stream_losses(model, tokens, sentence_start, paragraph_start, args.tgt_len)
        row = "".join(f"{math.exp(losses[mask].mean()):>24.2f}" for mask in groups.values())
        print(f"{checkpoint[-50:]:<50}{row}", flush=True)


if __name__ == "__main__":
    cli_main()
