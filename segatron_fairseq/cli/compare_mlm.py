"""Pre-train each encoder objective with and without the index embeddings the same way; print a held-out measure.

    segatron-compare-mlm --data DATA_BIN [--objectives mlm] [--max-update 600] [--eval-every 150]

DATA_BIN is a segatron-preprocess directory with train and valid. For each
objective (``cli.encoder_objectives``: masked LM, ...), SegaBERT (the index
tables) and BERT (learned absolute positions) have the same width, layers,
steps, learning-rate schedule, seed and examples (``--task segabert_mlm``, one
epoch of fresh document examples), and the same number of parameters:
SegaBERT's index tables have 50 + 100 + 256 = 406 rows, and BERT's learned
positions get 406 rows too (``--max-positions 404``, fairseq adds two). Each
is trained with ``fairseq-train``, keeping a checkpoint every ``--eval-every``
updates, and each checkpoint is scored with ``fairseq-validate`` on valid,
whose examples and masks depend only on the seed (fairseq's
``MaskTokensDataset``), so both models of an objective are scored on the same
masked tokens. This is the small-scale version of the paper's pre-training
comparison of SegaBERT and BERT.

Every option, --data and the folders are checked before anything runs; a
model's folder in --workdir (WORKDIR/OBJECTIVE/MODEL) that holds an earlier
run is refused unless --overwrite (as ``segatron-compare-lm``), and so is an
existing --out file.
"""
import argparse
import json
import os
import re
import sys

import torch
from fairseq.checkpoint_utils import load_checkpoint_file

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.cli.compare_lm import check_data, check_folders, check_numbers, fresh_folder, run, write_results
from segatron_fairseq.cli.encoder_objectives import OBJECTIVES, model_options
from segatron_fairseq.cli.user_errors import exit_on_user_error, positive_int
from segatron_fairseq.segments import TABLE_SIZES

FAIRSEQ_TRAIN = [sys.executable, "-m", "fairseq_cli.train"]
FAIRSEQ_VALIDATE = [sys.executable, "-m", "fairseq_cli.validate"]
# BERT's learned positions: max_positions + 2 rows, as many as SegaBERT's three index tables
BERT_MAX_POSITIONS = sum(TABLE_SIZES.values()) - 2
MODELS = {"segabert": [], "bert": ["--max-positions", BERT_MAX_POSITIONS]}


def train(args, objective, model, work):
    device = ["--cpu"] if not torch.cuda.is_available() else []
    run([*FAIRSEQ_TRAIN, args.data, "--user-dir", PLUGIN_DIR, *objective.training,
         "--arch", objective.archs[model], *MODELS[model], *model_options(objective, args.dim),
         "--encoder-layers", args.layers, "--encoder-embed-dim", args.dim,
         "--encoder-attention-heads", args.heads, "--encoder-ffn-embed-dim", args.ffn, "--dropout", args.dropout,
         "--tokens-per-sample", args.tokens_per_sample, "--batch-size", args.batch_size,
         "--examples-per-epoch", args.batch_size * args.max_update, "--optimizer", "adam",
         "--adam-betas", "(0.9,0.999)", "--weight-decay", 0.01, "--lr", args.lr, "--lr-scheduler", "polynomial_decay",
         "--warmup-updates", args.warmup, "--total-num-update", args.max_update, "--max-update", args.max_update,
         "--seed", args.seed, "--save-dir", work, "--no-epoch-checkpoints", "--save-interval-updates",
         args.eval_every, "--keep-interval-updates", -1, "--disable-validation", "--log-format", "simple",
         "--log-interval", 50, *device], os.path.join(work, "train.log"))


def checkpoint_at(work, updates, max_update) -> str:
    """The checkpoint saved after ``updates`` updates. Training is one epoch of
    ``max_update`` batches (fairseq skips the interval checkpoint that falls on
    an epoch's end), so the last one is checkpoint_last.pt."""
    name = "checkpoint_last.pt" if updates == max_update else f"checkpoint_1_{updates}.pt"
    path = os.path.join(work, name)
    saved = load_checkpoint_file(path)["optimizer_history"][-1]["num_updates"]
    if saved != updates:
        sys.exit(f"{path} holds the model after {saved} updates, not {updates}")
    return path


def validation_scores(log: str) -> dict:
    """``fairseq-validate``'s summary line of valid as {name: value} (loss, ppl,
    and what the criterion logs, e.g. mlm_ppl)."""
    match = re.search(r"valid on 'valid' subset \| (.*)$", log, re.M)
    if match is None:
        return {}
    pairs = (item.strip().split(" ", 1) for item in match.group(1).split("|"))
    return {name: float(value) for name, value in pairs if re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", value.strip())}


def detection_scores(args, checkpoint, log_path) -> dict:
    """ELECTRA's held-out measure: the discriminator on valid with the task's
    seeded masks and unigram replacements (the same inputs for every model)."""
    from segatron_fairseq.evaluation.replaced_token_detection import score_split
    from segatron_fairseq.hub.checkpoints import load_checkpoint

    loaded = load_checkpoint(checkpoint, "segabert_electra", os.path.abspath(args.data), corpus_option="--data")
    loaded.task.cfg.examples_per_epoch = 0  # about one pass over valid's tokens
    if torch.cuda.is_available():
        loaded.model.cuda()
    scores = score_split(loaded.model, loaded.task, "valid", seed=args.seed, batch_size=args.batch_size)
    result = {"rtd_auc": scores.auc, "rtd_accuracy": scores.accuracy, "gen_ppl": scores.generator_ppl,
              "tokens": scores.tokens, "replaced": scores.replaced}
    with open(log_path, "w") as log:
        log.write(json.dumps(result) + "\n")
    return result


def validate(args, objective, checkpoint, log_path) -> float:
    if objective.measure == "rtd_auc":
        return detection_scores(args, checkpoint, log_path)["rtd_auc"]
    device = ["--cpu"] if not torch.cuda.is_available() else []
    out = run([*FAIRSEQ_VALIDATE, args.data, "--user-dir", PLUGIN_DIR, "--task", "segabert_mlm", "--path", checkpoint,
               "--valid-subset", "valid", "--batch-size", args.batch_size, *device,
               # about one pass over valid's tokens (training's --examples-per-epoch is for train)
               "--model-overrides", "{'examples_per_epoch': 0}"], log_path)
    scores = validation_scores(out)
    if objective.measure not in scores:
        sys.exit(f"no {objective.measure} in {log_path}")
    return scores[objective.measure]


# fairseq 0.12.2's encoder layers register zero copies of their weights for BetterTransformer inference
# (``layers.N.in_proj_weight``, ``fc1_weight``, ...), never trained
_FAST_PATH_COPY = re.compile(r"\.layers\.\d+\.(in_proj|out_proj|fc1|fc2)_(weight|bias)$")


def trained_parameters(state_dict) -> int:
    """The number of trained parameters of a checkpoint's ``state_dict``: each
    tensor once (ELECTRA's shared tables appear under the generator too) and
    without fairseq's zero fast-path copies."""
    seen, count = set(), 0
    for name, tensor in state_dict.items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if _FAST_PATH_COPY.search(name) or key in seen:
            continue
        seen.add(key)
        count += tensor.numel()
    return count


def train_and_score(args, objective, model):
    work = os.path.join(args.workdir, objective.name, model)
    fresh_folder(work)
    train(args, objective, model, work)
    state = load_checkpoint_file(os.path.join(work, "checkpoint_last.pt"))
    result = {"objective": objective.name, "model": model, "measure": objective.measure,
              "params": trained_parameters(state["model"]), "scores": {}}
    for updates in range(args.eval_every, args.max_update + 1, args.eval_every):
        checkpoint = checkpoint_at(work, updates, args.max_update)
        log = os.path.join(work, f"valid_{updates}.log")
        result["scores"][updates] = validate(args, objective, checkpoint, log)
    print(f"  {objective.name} {model}: " + ", ".join(f"{u}: {v:.4g}" for u, v in result["scores"].items()),
          flush=True)
    return result


def print_table(objective, results) -> None:
    """Updates, the measure of SegaBERT and BERT, their ratio; and the parameter counts."""
    print(f"\n{objective.name}: {objective.help}")
    print(f"{'updates':>8} " + " ".join(f"{r['model'] + ' ' + objective.measure:>18}" for r in results)
          + f" {'segabert / bert':>16}")
    for updates in results[0]["scores"]:
        values = [r["scores"][updates] for r in results]
        print(f"{updates:>8} " + " ".join(f"{v:>18.4f}" for v in values) + f" {values[0] / values[1]:>16.3f}")
    print("params: " + ", ".join(f"{r['model']} {r['params']:,}" for r in results))


def objective_list(text: str):
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in OBJECTIVES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: not an objective "
                                         f"(choose from {', '.join(OBJECTIVES)})")
    return [OBJECTIVES[name] for name in dict.fromkeys(names)]


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-compare-mlm", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", required=True, help="segatron-preprocess directory with train and valid")
    p.add_argument("--objectives", type=objective_list, default="mlm",
                   help="comma-separated, from: " + "; ".join(f"{o.name} ({o.help})" for o in OBJECTIVES.values())
                   .replace("%", "%%"))  # argparse formats help strings with %
    p.add_argument("--workdir", default="compare_mlm_runs", help="one folder per objective and model: "
                   "checkpoints and logs")
    p.add_argument("--layers", type=positive_int, default=4)
    p.add_argument("--dim", type=positive_int, default=128)
    p.add_argument("--heads", type=positive_int, default=4)
    p.add_argument("--ffn", type=positive_int, default=512)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--tokens-per-sample", type=positive_int, default=128,
                   help="document examples of at most this many tokens")
    p.add_argument("--batch-size", type=positive_int, default=16)
    p.add_argument("--max-update", type=positive_int, default=600)
    p.add_argument("--eval-every", type=positive_int, default=150, help="score a checkpoint every this many updates")
    p.add_argument("--warmup", type=int, default=60)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="also write the results as JSON here")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a model's folder in --workdir that holds an earlier run, and an existing --out "
                        "(else refused)")
    args = p.parse_args(argv)
    with exit_on_user_error(p.prog):
        _compare(p, args)


def _compare(p, args) -> None:
    if args.tokens_per_sample > BERT_MAX_POSITIONS:
        p.error(f"--tokens-per-sample: must be at most {BERT_MAX_POSITIONS}, not {args.tokens_per_sample}")
    if args.max_update % args.eval_every:
        p.error(f"--eval-every {args.eval_every} does not divide --max-update {args.max_update}")
    check_numbers(p, args)
    check_data(p, args.data, ("train", "valid"))
    check_folders(p, args, [os.path.join(o.name, model) for o in args.objectives for model in MODELS])
    print(f"pre-training segabert and bert ({', '.join(o.name for o in args.objectives)}) on {args.data}: "
          f"{args.layers} layers, d={args.dim}, {args.max_update} updates of {args.batch_size} x "
          f"{args.tokens_per_sample} tokens, seed {args.seed}", flush=True)
    results = []
    for objective in args.objectives:
        pair = [train_and_score(args, objective, model) for model in MODELS]
        print_table(objective, pair)
        results.extend(pair)
    if args.out:
        write_results(args.out, results)


if __name__ == "__main__":
    cli_main()
