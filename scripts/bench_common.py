"""Shared driver of the model benchmarks: every variant in a fresh process,
interleaved over rounds, the best round of each kept."""
import json
import subprocess
import sys
from typing import Dict, List


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
