"""Train Segatron-XL, its ablations and Transformer-XL the same way; print perplexities.

    segatron-compare-lm --data DATA_BIN [--variants segatron_xl,no_paragraph,no_sentence,transformer_xl]

DATA_BIN is a segatron-preprocess directory with train/valid/test. Every
variant has the same width, layers, parameters (W_R is d x d whichever parts
R has), steps, learning-rate schedule and seed; each is trained with
``fairseq-train --task segatron_lm`` and scored with ``fairseq-eval-lm`` on
valid and test. This is the small-scale version of the paper's Table 2.
The test split is also scored as segatron-loss-by-boundary scores it, and the
table adds the test perplexity of three kinds of target token: the first token
of a paragraph, of another sentence, and any other token (where a variant gains
or loses). ``--validate-every N`` validates during training, so each variant's
train.log holds the valid curve that ``segatron-plot curves`` draws.

Every option, --data and the folders are checked before anything runs. Each
variant trains into WORKDIR/VARIANT; a folder there that holds files (an
earlier run) is refused, never resumed (its checkpoint may have other
settings), unless --overwrite, which replaces it. An existing --out file is
refused too unless --overwrite, and --out is checked to be writable before
any training.
"""
import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
from typing import Set

import torch
from fairseq.checkpoint_utils import load_checkpoint_file

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.cli.lm_results import format_table
from segatron_fairseq.cli.loss_by_boundary import checkpoint_losses
from segatron_fairseq.cli.user_errors import check_output, exit_on_user_error, positive_int
from segatron_fairseq.evaluation.boundary_kinds import losses_by_kind
from segatron_fairseq.evaluation.token_losses import read_stream
from segatron_preprocess.corpus_format import DICT_FILE, dataset_files

# the fairseq CLIs of this interpreter (also where fairseq is on PYTHONPATH without console scripts)
FAIRSEQ_TRAIN = [sys.executable, "-m", "fairseq_cli.train"]
FAIRSEQ_EVAL_LM = [sys.executable, "-m", "fairseq_cli.eval_lm"]
# the stream is read from memory maps: a loader process costs more than it saves (its start, and the 5 s
# wait for its end after each validation); the batches and figures are the same
DATA_IN_PROCESS = ["--num-workers", 0]
TABLE2_VARIANTS = {
    "segatron_xl": [],
    "no_paragraph": ["--no-paragraph-part"],
    "no_sentence": ["--no-sentence-part"],
    "transformer_xl": ["--no-sentence-part", "--no-paragraph-part"],
}
# the authors' distances (see --segment-distance-origin): not causal, so only on request
VARIANTS = {**TABLE2_VARIANTS, "segatron_xl_window_end": ["--segment-distance-origin", "window_end"]}


def run(cmd, log_path):
    with open(log_path, "w") as log:
        proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log.write(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"failed ({log_path}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def model_args(args):
    out = ["--arch", "segatron_xl", "--decoder-layers", args.layers, "--decoder-embed-dim", args.dim,
           "--decoder-attention-heads", args.heads, "--decoder-head-dim", args.dim // args.heads,
           "--decoder-ffn-embed-dim", args.ffn, "--dropout", args.dropout, "--mem-len", args.mem_len]
    if args.adaptive_softmax_cutoff:
        out += ["--adaptive-softmax-cutoff", args.adaptive_softmax_cutoff, "--adaptive-input",
                "--tie-adaptive-weights", "--tie-adaptive-proj"]
    return out


def evaluate(args, checkpoint, split, log_path):
    out = run([*FAIRSEQ_EVAL_LM, args.data, "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
               "--path", checkpoint, "--gen-subset", split, "--batch-size", args.eval_batch_size,
               "--tgt-len", args.tgt_len, *DATA_IN_PROCESS, "--cpu" if not torch.cuda.is_available() else "--fp16"],
              log_path)
    match = re.search(r"Evaluated ([\d,]+) tokens.*\n.*Loss \(base 2\): ([0-9.]+), Perplexity: ([0-9.]+)", out)
    return {"tokens": int(match.group(1).replace(",", "")), "ppl": float(match.group(3))}


def check_data(parser, data: str, splits) -> None:
    """``--data`` is a segatron-preprocess directory with ``splits``."""
    if not os.path.isdir(data):
        parser.error(f"--data {data}: not a directory")
    needed = [os.path.join(data, DICT_FILE)] + [f for split in splits for f in dataset_files(os.path.join(data, split))]
    missing = [path for path in needed if not os.path.isfile(path)]
    if missing:
        parser.error(f"--data {data}: not a segatron-preprocess directory with {', '.join(splits)} (no {missing[0]})")


RUN_FILES = ("checkpoint*.pt", "*.log")  # what a variant's run writes into its folder


def run_files(folder: str) -> Set[str]:
    """The entries of ``folder`` a variant's run writes: regular files matching ``RUN_FILES``."""
    return {name for name in os.listdir(folder)
            if any(fnmatch.fnmatch(name, pattern) for pattern in RUN_FILES)
            and os.path.isfile(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name))}


def check_folders(parser, args, names) -> None:
    """``--workdir``'s variant folders are free (or hold an earlier run's files alone, with --overwrite) and
    ``--out`` can be written."""
    if os.path.exists(args.workdir) and not os.path.isdir(args.workdir):
        parser.error(f"--workdir {args.workdir}: a file, not a directory")
    for name in names:
        folder = os.path.join(args.workdir, name)
        if os.path.exists(folder) and not os.path.isdir(folder):
            parser.error(f"--workdir {args.workdir}: {folder} is a file, not a directory")
        if not os.path.isdir(folder):
            continue
        entries = os.listdir(folder)
        if entries and not args.overwrite:
            parser.error(f"--workdir {args.workdir}: {folder} holds an earlier run; pass --overwrite to replace it, "
                         f"or name another --workdir")
        others = sorted(set(entries) - run_files(folder))
        if others:
            parser.error(f"--workdir {args.workdir}: {os.path.join(folder, others[0])} was not written by a run "
                         f"(only {' and '.join(RUN_FILES)} are replaced); move it or name another --workdir")
    if args.out is not None:
        inputs = {f"--data's {name}": os.path.join(args.data, name) for name in os.listdir(args.data)}
        try:
            check_output(args.out, inputs=inputs, overwrite=args.overwrite)
        except ValueError as err:
            parser.error(str(err))


def check_numbers(parser, args) -> None:
    """What ``positive_int`` does not check: non-negative counts, a dropout probability, a positive rate."""
    for option in ("mem_len", "warmup", "validate_every"):
        if getattr(args, option, 0) < 0:
            parser.error(f"--{option.replace('_', '-')}: must be at least 0, not {getattr(args, option)}")
    if not 0 <= args.dropout < 1:
        parser.error(f"--dropout: must be in [0, 1), not {args.dropout}")
    if not args.lr > 0:
        parser.error(f"--lr: must be above 0, not {args.lr}")
    if args.dim % args.heads:
        parser.error(f"--dim {args.dim} is not a multiple of --heads {args.heads}")


def write_results(path: str, results) -> None:
    """``results`` as JSON at ``path`` (``--out``), whole or not at all."""
    from segatron_preprocess.atomic import atomic_path

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        json.dump(results, f, indent=2)


def fresh_folder(folder: str) -> None:
    """``folder`` empty: created, or its earlier run's files removed when ``check_folders`` allowed it
    (--overwrite; it holds nothing else)."""
    os.makedirs(folder, exist_ok=True)
    for name in sorted(run_files(folder)):
        os.remove(os.path.join(folder, name))


def validation_args(validate_every: int):
    """fairseq-train's options for validating every ``validate_every`` updates and at the end (none: 0)."""
    if validate_every == 0:
        return ["--disable-validation"]
    # --validate-interval in epochs, past any run's last: only the update interval and the end validate
    return ["--validate-interval-updates", validate_every, "--validate-interval", 10**9]


def score_by_kind(args, checkpoint: str, test_stream):
    """``losses_by_kind`` of ``checkpoint`` on ``test_stream`` (``read_stream`` of the test split: tokens,
    sentence and paragraph starts), as segatron-loss-by-boundary scores a split."""
    tokens, sentence_start, paragraph_start = test_stream
    losses = checkpoint_losses(checkpoint, args.data, tokens, sentence_start, paragraph_start, args.tgt_len)
    return losses_by_kind(losses, sentence_start, paragraph_start)


def train_and_score(args, name, test_stream):
    work = os.path.join(args.workdir, name)
    fresh_folder(work)
    device = ["--cpu"] if not torch.cuda.is_available() else []
    start = time.perf_counter()
    run([*FAIRSEQ_TRAIN, args.data, "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
         "--criterion", "segatron_lm_loss", *model_args(args), *VARIANTS[name],
         "--batch-size", args.batch_size, "--tgt-len", args.tgt_len, "--optimizer", "adam",
         "--adam-betas", "(0.9,0.999)", "--lr", args.lr, "--lr-scheduler", "cosine",
         "--warmup-updates", args.warmup, "--clip-norm", 0.25, "--max-update", args.max_update,
         "--seed", args.seed, "--save-dir", work, "--no-epoch-checkpoints", "--save-interval-updates", 0,
         *validation_args(args.validate_every), *DATA_IN_PROCESS, "--log-format", "simple", "--log-interval", 50,
         *device],
        os.path.join(work, "train.log"))
    seconds = time.perf_counter() - start
    checkpoint = os.path.join(work, "checkpoint_last.pt")
    state = load_checkpoint_file(checkpoint)
    params = sum(v.numel() for v in state["model"].values())
    result = {"variant": name, "params": params, "updates": args.max_update, "train_seconds": round(seconds, 1)}
    for split in ("valid", "test"):
        result[split] = evaluate(args, checkpoint, split, os.path.join(work, f"eval_{split}.log"))["ppl"]
    result["test_by_kind"] = score_by_kind(args, checkpoint, test_stream)
    print(f"  {name}: valid {result['valid']:.2f}, test {result['test']:.2f} ({seconds:.0f} s)", flush=True)
    return result


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-compare-lm", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", required=True, help="segatron-preprocess directory with train, valid, test")
    p.add_argument("--variants", default=",".join(TABLE2_VARIANTS), help=f"comma separated, from {list(VARIANTS)}")
    p.add_argument("--workdir", default="compare_lm_runs", help="one folder per variant: checkpoints and logs")
    p.add_argument("--layers", type=positive_int, default=4, help="layers of every variant")
    p.add_argument("--dim", type=positive_int, default=128, help="model width d")
    p.add_argument("--heads", type=positive_int, default=4, help="attention heads")
    p.add_argument("--ffn", type=positive_int, default=512, help="feed-forward inner width")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout")
    p.add_argument("--tgt-len", type=positive_int, default=64, help="tokens per segment (training and scoring)")
    p.add_argument("--mem-len", type=int, default=64, help="tokens of memory")
    p.add_argument("--batch-size", type=positive_int, default=16, help="stream rows in training")
    p.add_argument("--eval-batch-size", type=positive_int, default=1, help="stream rows in fairseq-eval-lm")
    p.add_argument("--max-update", type=positive_int, default=2000, help="training updates")
    p.add_argument("--warmup", type=int, default=100, help="warm-up updates of the cosine schedule")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--validate-every", type=int, default=0,
                   help="validate every N updates (the valid lines of train.log); 0: no validation in training")
    p.add_argument("--seed", type=int, default=1, help="seed of every variant")
    p.add_argument("--adaptive-softmax-cutoff", default=None, help="e.g. 2000,6000 for a large vocabulary")
    p.add_argument("--out", help="also write the results as JSON here")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a variant's folder in --workdir that holds an earlier run, and an existing --out "
                        "(else refused)")
    args = p.parse_args(argv)
    with exit_on_user_error(p.prog):
        _compare(p, args)


def _compare(p, args) -> None:
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    check_numbers(p, args)
    check_data(p, args.data, ("train", "valid", "test"))
    check_folders(p, args, variants)
    print(f"training {len(variants)} variants on {args.data}: {args.layers} layers, d={args.dim}, "
          f"{args.max_update} updates of {args.batch_size} x {args.tgt_len} tokens, seed {args.seed}", flush=True)
    test_stream = read_stream(os.path.join(args.data, "test"))  # the same for every variant
    results = [train_and_score(args, name, test_stream) for name in variants]
    print()
    print(format_table(results))
    if args.out:
        write_results(args.out, results)


if __name__ == "__main__":
    cli_main()
