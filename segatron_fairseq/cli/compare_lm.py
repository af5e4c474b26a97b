"""Train Segatron-XL, its ablations and Transformer-XL the same way; print perplexities.

    segatron-compare-lm --data DATA_BIN [--variants segatron_xl,no_paragraph,no_sentence,transformer_xl]

DATA_BIN is a segatron-preprocess directory with train/valid/test. Every
variant has the same width, layers, parameters (W_R is d x d whichever parts
R has), steps, learning-rate schedule and seed; each is trained with
``fairseq-train --task segatron_lm`` and scored with ``fairseq-eval-lm`` on
valid and test. This is the small-scale version of the paper's Table 2.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import torch

from segatron_fairseq import PLUGIN_DIR

# the fairseq CLIs of this interpreter (also where fairseq is on PYTHONPATH without console scripts)
FAIRSEQ_TRAIN = [sys.executable, "-m", "fairseq_cli.train"]
FAIRSEQ_EVAL_LM = [sys.executable, "-m", "fairseq_cli.eval_lm"]
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
               "--tgt-len", args.tgt_len, "--cpu" if not torch.cuda.is_available() else "--fp16"], log_path)
    match = re.search(r"Evaluated ([\d,]+) tokens.*\n.*Loss \(base 2\): ([0-9.]+), Perplexity: ([0-9.]+)", out)
    return {"tokens": int(match.group(1).replace(",", "")), "ppl": float(match.group(3))}


def train_and_score(args, name):
    work = os.path.join(args.workdir, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    device = ["--cpu"] if not torch.cuda.is_available() else []
    start = time.perf_counter()
    run([*FAIRSEQ_TRAIN, args.data, "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
         "--criterion", "segatron_lm_loss", *model_args(args), *VARIANTS[name],
         "--batch-size", args.batch_size, "--tgt-len", args.tgt_len, "--optimizer", "adam",
         "--adam-betas", "(0.9,0.999)", "--lr", args.lr, "--lr-scheduler", "cosine",
         "--warmup-updates", args.warmup, "--clip-norm", 0.25, "--max-update", args.max_update,
         "--seed", args.seed, "--save-dir", work, "--no-epoch-checkpoints", "--save-interval-updates", 0,
         "--disable-validation", "--log-format", "simple", "--log-interval", 50, *device],
        os.path.join(work, "train.log"))
    seconds = time.perf_counter() - start
    checkpoint = os.path.join(work, "checkpoint_last.pt")
    from fairseq.checkpoint_utils import load_checkpoint_file

    state = load_checkpoint_file(checkpoint)
    params = sum(v.numel() for v in state["model"].values())
    result = {"variant": name, "params": params, "train_seconds": round(seconds, 1)}
    for split in ("valid", "test"):
        result[split] = evaluate(args, checkpoint, split, os.path.join(work, f"eval_{split}.log"))["ppl"]
    print(f"  {name}: valid {result['valid']:.2f}, test {result['test']:.2f} ({seconds:.0f} s)", flush=True)
    return result


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-compare-lm", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", required=True, help="segatron-preprocess directory with train, valid, test")
    p.add_argument("--variants", default=",".join(TABLE2_VARIANTS), help=f"comma separated, from {list(VARIANTS)}")
    p.add_argument("--workdir", default="compare_lm_runs", help="one folder per variant: checkpoints and logs")
    p.add_argument("--layers", type=int, default=4, help="layers of every variant")
    p.add_argument("--dim", type=int, default=128, help="model width d")
    p.add_argument("--heads", type=int, default=4, help="attention heads")
    p.add_argument("--ffn", type=int, default=512, help="feed-forward inner width")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout")
    p.add_argument("--tgt-len", type=int, default=64, help="tokens per segment (training and scoring)")
    p.add_argument("--mem-len", type=int, default=64, help="tokens of memory")
    p.add_argument("--batch-size", type=int, default=16, help="stream rows in training")
    p.add_argument("--eval-batch-size", type=int, default=1, help="stream rows in fairseq-eval-lm")
    p.add_argument("--max-update", type=int, default=2000, help="training updates")
    p.add_argument("--warmup", type=int, default=100, help="warm-up updates of the cosine schedule")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--seed", type=int, default=1, help="seed of every variant")
    p.add_argument("--adaptive-softmax-cutoff", default=None, help="e.g. 2000,6000 for a large vocabulary")
    p.add_argument("--out", help="also write the results as JSON here")
    args = p.parse_args(argv)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    print(f"training {len(variants)} variants on {args.data}: {args.layers} layers, d={args.dim}, "
          f"{args.max_update} updates of {args.batch_size} x {args.tgt_len} tokens, seed {args.seed}", flush=True)
    results = [train_and_score(args, name) for name in variants]
    baseline = next((r for r in results if r["variant"] == "transformer_xl"), None)
    print()
    print(f"{'model':<16} {'params':>10} {'valid ppl':>10} {'test ppl':>10} {'test / XL':>10}")
    for r in results:
        ratio = f"{r['test'] / baseline['test']:.3f}" if baseline else "-"
        print(f"{r['variant']:<16} {r['params']:>10,} {r['valid']:>10.2f} {r['test']:>10.2f} {ratio:>10}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    cli_main()
