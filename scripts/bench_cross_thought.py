"""Pre-training throughput: Cross-Thought vs a plain masked LM of the same encoder, same tokens.

    python scripts/bench_cross_thought.py [--layers 12] [--num-sequences 500] [--sequence-length 64]
                                          [--batch-size 1] [--steps 5] [--repeats 2] [--dtype float32|bf16|fp16]

Both read the same B x M x L tokens per step with 15% masked: fairseq's
``roberta_base`` as B*M sequences of L tokens, ``cross_thought_base`` (same
encoder size) as B samples of M sequences with its N special tokens, cross-
sequence layers and final layer. Forward, masked-LM loss, backward, Adam step;
each variant in a fresh process, interleaved over rounds, best round kept.
"""
import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

from bench_common import peak_memory_mib, report, run_interleaved

ARCHS = {"roberta": "roberta_base", "cross_thought": "cross_thought_base"}


def measure(args) -> dict:
    import torch
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import segatron_fairseq  # noqa: F401  (registers cross_thought)

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    dictionary = Dictionary()
    for i in range(args.vocab - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    arch = ARCHS[args.variant]
    model_args = SimpleNamespace(encoder_layers=args.layers, max_positions=args.sequence_length + 80)
    ARCH_CONFIG_REGISTRY[arch](model_args)
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary,
                           max_positions=lambda: model_args.max_positions)
    model = ARCH_MODEL_REGISTRY[arch].build_model(model_args, task).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.dtype)
    scaler = torch.amp.GradScaler(enabled=args.dtype == "fp16")
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, args.num_sequences, args.sequence_length)

    def batch():
        tokens = torch.randint(4, args.vocab, shape, generator=generator)
        masked = torch.rand(shape, generator=generator) < 0.15
        if args.variant == "roberta":
            tokens, masked = tokens.view(-1, args.sequence_length), masked.view(-1, args.sequence_length)
        return tokens.to(device), masked.to(device)

    batches = [batch() for _ in range(args.steps + args.warmup)]

    def step(tokens, masked):
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits, _ = model(tokens, masked_tokens=masked)
            loss = torch.nn.functional.cross_entropy(logits.float(), tokens[masked], reduction="sum")
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for b in batches[: args.warmup]:
        step(*b)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for b in batches[args.warmup:]:
        step(*b)
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    tokens = args.steps * args.batch_size * args.num_sequences * args.sequence_length
    return {"variant": args.variant, "tokens_per_s": tokens / elapsed, "peak_mib": peak_memory_mib(device),
            "params": sum(p.numel() for p in model.parameters()),
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50000)
    p.add_argument("--num-sequences", type=int, default=500)
    p.add_argument("--sequence-length", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--dtype", choices=("float32", "bf16", "fp16"), default="float32")
    p.add_argument("--variant", choices=list(ARCHS), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.variant:
        print(json.dumps(measure(args)))
        return
    best = run_interleaved(__file__, sys.argv[1:], list(ARCHS), args.repeats)
    print(f"\nwidth 768, {args.layers} layers, {args.batch_size} x {args.num_sequences} x {args.sequence_length} "
          f"tokens per step, {args.dtype} on {best['roberta']['device']}")
    report(best["roberta"], best["cross_thought"], "no target; the cost of N special tokens and the cross layers")


if __name__ == "__main__":
    main()
