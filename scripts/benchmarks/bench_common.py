"""Shared driver of the model benchmarks: every variant in a fresh process,
interleaved over rounds, the best round of each kept."""
import json
import subprocess
import sys
import time
from typing import Callable, Dict, List, Sequence


def add_timing_options(parser, variants, steps: int = 10, warmup: int = 2) -> None:
    """The options every training benchmark takes: --steps, --warmup, --repeats, --threads, --dtype, and the
    hidden --variant (one of ``variants``, or any name when None) of the measuring process."""
    import argparse
    import os

    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dtype", choices=("float32", "bf16", "fp16"), default="float32")
    parser.add_argument("--variant", choices=None if variants is None else list(variants), help=argparse.SUPPRESS)


def run_interleaved(script: str, argv: List[str], variants: List[str], repeats: int) -> Dict[str, dict]:
    """Run ``script argv --variant V`` for each variant, ``repeats`` rounds;
    each run prints one JSON line with at least ``tokens_per_s`` and ``peak_mib``."""
    best: Dict[str, dict] = {}
    for round_number in range(repeats):
        for variant in variants:
            out = subprocess.run([sys.executable, script, *argv, "--variant", variant], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            print(f"round {round_number + 1}: {variant:<15} {result['tokens_per_s']:>10,.0f} tokens/s  "
                  f"peak {result['peak_mib']:>8,.0f} MiB", flush=True)
            if variant not in best or result["tokens_per_s"] > best[variant]["tokens_per_s"]:
                best[variant] = result
    return best


def peak_memory_mib(device) -> float:
    """Peak GPU memory allocated, or the process's peak RSS on CPU."""
    import resource

    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(baseline: dict, candidate: dict, target: str) -> None:
    print(f"{'model':<16} {'tokens/s':>12} {'peak MiB':>10} {'params':>12}")
    for r in (baseline, candidate):
        print(f"{r['variant']:<16} {r['tokens_per_s']:>12,.0f} {r['peak_mib']:>10,.0f} {r['params']:>12,}")
    print(f"{candidate['variant']} / {baseline['variant']}: throughput "
          f"{candidate['tokens_per_s'] / baseline['tokens_per_s']:.3f}x ({target}), "
          f"peak memory {candidate['peak_mib'] / baseline['peak_mib']:.3f}x")


def setup_device(threads: int):
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(threads)
    return device


def synthetic_dictionary(size: int):
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    for i in range(size - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    return dictionary


def build_registered_model(arch: str, dictionary, max_positions: int, device, **overrides):
    """A model of architecture ``arch`` from fairseq's registries, with the
    architecture's defaults for every argument not in ``overrides``."""
    from types import SimpleNamespace

    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import segatron_fairseq  # noqa: F401  (registers the plugin's architectures)

    args = SimpleNamespace(max_positions=max_positions, **overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary,
                           max_positions=lambda: max_positions)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, task).to(device).train()


def time_training(model, loss_of_batch: Callable, batches: Sequence, warmup: int, dtype: str, device,
                  cast_model: bool = False) -> float:
    """Seconds for the training steps (forward, loss, backward, Adam) on
    ``batches[warmup:]``, after ``warmup`` untimed steps; peak memory counts
    from the first timed step on GPU.

    bf16 / fp16 run under autocast (fairseq's ``--amp``), or, with ``cast_model``,
    with the model's parameters cast to that type as ``fairseq-train --fp16`` /
    hydra's ``common.bf16`` do."""
    import torch

    half_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype)
    if cast_model and half_dtype is not None:
        model.to(half_dtype)
    autocast_dtype = None if cast_model else half_dtype
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(enabled=dtype == "fp16" and not cast_model)

    def step(batch):
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = loss_of_batch(*batch)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for batch in batches[:warmup]:
        step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for batch in batches[warmup:]:
        step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def result(variant: str, tokens: int, seconds: float, model, device) -> dict:
    import torch

    return {"variant": variant, "tokens_per_s": tokens / seconds, "peak_mib": peak_memory_mib(device),
            "params": sum(p.numel() for p in model.parameters()),
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}
