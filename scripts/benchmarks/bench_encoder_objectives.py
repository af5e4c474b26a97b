"""Training-step throughput of each encoder objective against plain masked LM of the same encoder.

    python scripts/benchmarks/bench_encoder_objectives.py --data DATA_BIN [--objectives mlm,...]
        [--model segabert|bert] [--layers 12 --dim 768 --heads 12 --ffn 3072] [--batch-size 8]
        [--tokens-per-sample 512] [--steps 10] [--repeats 2] [--dtype float32|bf16|fp16]

Each objective (``segatron_fairseq.cli.encoder_objectives``, the options
``segatron-compare-mlm`` trains with) and its baseline, the masked LM of the
same encoder (same architecture, layers, width and sharing), are timed through
fairseq's own ``Trainer.train_step`` (the task's batches of DATA_BIN's train
split, the criterion, backward, the Adam step), each in a fresh process,
interleaved over ``--repeats`` rounds; the best round counts. Tokens are the
batch's non-padding tokens.
"""
import argparse
import json
import os
import sys
import time

from bench_common import add_timing_options, run_interleaved

BASELINE = "mlm"


def fairseq_args(args, objective_name: str, training_of: str):
    """fairseq-train's arguments of ``objective_name``'s encoder trained with
    ``training_of``'s task and criterion."""
    from fairseq import options

    from segatron_fairseq import PLUGIN_DIR
    from segatron_fairseq.cli.encoder_objectives import OBJECTIVES, model_options

    objective, training = OBJECTIVES[objective_name], OBJECTIVES[training_of]
    arch = objective.archs[args.model] if training_of == objective_name else objective.mlm_archs[args.model]
    model = model_options(objective, args.dim)
    if training_of != objective_name:  # the encoder alone: no generator
        model = [option for option, value in zip(model[::2], model[1::2]) if not option.startswith("--generator")
                 for option in (option, value)]
    argv = [args.data, "--user-dir", PLUGIN_DIR, *training.training, "--arch", arch, *model,
            "--encoder-layers", args.layers, "--encoder-embed-dim", args.dim, "--encoder-attention-heads",
            args.heads, "--encoder-ffn-embed-dim", args.ffn, "--tokens-per-sample", args.tokens_per_sample,
            "--max-positions", args.tokens_per_sample, "--batch-size", args.batch_size, "--optimizer", "adam",
            "--lr", "1e-4", "--seed", 1, "--examples-per-epoch", args.batch_size * (args.steps + args.warmup),
            "--log-format", "none", "--skip-invalid-size-inputs-valid-test",
            *{"bf16": ["--bf16"], "fp16": ["--fp16"]}.get(args.dtype, [])]
    import torch

    if not torch.cuda.is_available():
        argv.append("--cpu")
    return options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv])


def measure(args) -> dict:
    import torch
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    objective, training_of = args.variant.split(":")
    if not torch.cuda.is_available():
        torch.set_num_threads(args.threads)
    cfg = convert_namespace_to_omegaconf(fairseq_args(args, objective, training_of))
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    batches = list(trainer.get_train_iterator(epoch=1, load_dataset=False).next_epoch_itr(shuffle=False))
    if len(batches) < args.steps + args.warmup:
        sys.exit(f"{args.data}: {len(batches)} batches of train, fewer than --steps + --warmup")
    device = next(model.parameters()).device
    for sample in batches[:args.warmup]:
        trainer.train_step([sample])
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    tokens = 0
    start = time.perf_counter()
    for sample in batches[args.warmup:args.warmup + args.steps]:
        trainer.train_step([sample])
        tokens += int(sample["net_input"]["src_lengths"].sum())
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    from bench_common import peak_memory_mib

    return {"variant": args.variant, "tokens_per_s": tokens / seconds, "peak_mib": peak_memory_mib(device),
            "params": sum(p.numel() for p in model.parameters()),
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from segatron_fairseq.cli.encoder_objectives import OBJECTIVES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="segatron-preprocess directory with a train split")
    p.add_argument("--objectives", default=",".join(OBJECTIVES), help="comma-separated: " + ", ".join(OBJECTIVES))
    p.add_argument("--model", choices=("segabert", "bert"), default="segabert",
                   help="with the index tables, or the BERT baseline")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--tokens-per-sample", type=int, default=512)
    add_timing_options(p, None)
    args = p.parse_args()
    if args.variant:
        print(json.dumps(measure(args)))
        return
    names = [name for name in args.objectives.split(",") if name]
    unknown = [name for name in names if name not in OBJECTIVES]
    if unknown:
        p.error(f"--objectives: {', '.join(unknown)}: not an objective ({', '.join(OBJECTIVES)})")
    variants = list(dict.fromkeys(v for name in names for v in (f"{name}:{BASELINE}", f"{name}:{name}")))
    best = run_interleaved(__file__, sys.argv[1:], variants, args.repeats)
    some = next(iter(best.values()))
    print(f"\n{args.model}, {args.layers} layers, width {args.dim}, batch {args.batch_size} x "
          f"{args.tokens_per_sample}, {args.dtype} on {some['device']}")
    print(f"{'objective':<16} {'tokens/s':>10} {'MLM tokens/s':>13} {'ratio':>7} {'peak MiB':>9} {'MLM peak':>9} "
          f"{'params':>12}")
    for name in names:
        run, mlm = best[f"{name}:{name}"], best[f"{name}:{BASELINE}"]
        print(f"{name:<16} {run['tokens_per_s']:>10,.0f} {mlm['tokens_per_s']:>13,.0f} "
              f"{run['tokens_per_s'] / mlm['tokens_per_s']:>7.3f} {run['peak_mib']:>9,.0f} {mlm['peak_mib']:>9,.0f} "
              f"{run['params']:>12,}")


if __name__ == "__main__":
    main()
