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

from bench_common import (
    build_registered_model,
    report,
    result,
    run_interleaved,
    setup_device,
    synthetic_dictionary,
    time_training,
)

ARCHS = {"roberta": "roberta_base", "cross_thought": "cross_thought_base"}


def measure(args) -> dict:
    import torch

    torch.manual_seed(0)
    device = setup_device(args.threads)
    dictionary = synthetic_dictionary(args.vocab)
    model = build_registered_model(ARCHS[args.variant], dictionary, args.sequence_length + 80, device,
                                   encoder_layers=args.layers)
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, args.num_sequences, args.sequence_length)

    def batch():
        tokens = torch.randint(4, args.vocab, shape, generator=generator)
        masked = torch.rand(shape, generator=generator) < 0.15
        if args.variant == "roberta":
            tokens, masked = tokens.view(-1, args.sequence_length), masked.view(-1, args.sequence_length)
        return tokens.to(device), masked.to(device)

    def loss_of_batch(tokens, masked):
        logits, _ = model(tokens, masked_tokens=masked)
        return torch.nn.functional.cross_entropy(logits.float(), tokens[masked], reduction="sum")

    batches = [batch() for _ in range(args.steps + args.warmup)]
    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device)
    tokens = args.steps * args.batch_size * args.num_sequences * args.sequence_length
    return result(args.variant, tokens, seconds, model, device)


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
