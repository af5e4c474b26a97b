"""Pre-training throughput and memory: Cross-Thought vs a plain masked LM of the same encoder, same tokens.

    python scripts/benchmarks/bench_cross_thought.py [--dim 768 --heads 12 --ffn 3072 --layers 12]
        [--num-sequences 500] [--sequence-length 64] [--batch-size 1] [--steps 5] [--repeats 2]
        [--dtype float32|bf16|fp16] [--encoder-chunk-sequences S] [--activation-memory]

Both read the same B x M x L tokens per step with 15% masked: fairseq's
``roberta_base`` as B*M sequences of L tokens, ``cross_thought_base`` (same
encoder, width from the command line) as B samples of M sequences with its
N = 5 special tokens, cross-sequence layers and final layer. Forward,
masked-LM loss, backward, Adam step; each variant in a fresh process,
interleaved over rounds, best round kept. Target: Cross-Thought >= 0.80x.

``--activation-memory`` times nothing: it counts the bytes autograd keeps for
the backward pass of one sample (M x L tokens), for 1 and 2 encoder layers,
and extrapolates to ``--layers`` (every layer keeps the same), with the
model cast to ``--dtype`` as fairseq's --fp16 / bf16 do. That is what one
sample costs on a GPU above the weights and the optimizer state, whatever
machine measures it.
"""
import argparse
import json
import sys

from bench_common import (
    add_timing_options,
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
                                   **width_overrides(args, args.layers))
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


def width_overrides(args, layers: int) -> dict:
    overrides = dict(encoder_layers=layers, encoder_embed_dim=args.dim, encoder_attention_heads=args.heads,
                     encoder_ffn_embed_dim=args.ffn)
    if args.variant == "cross_thought":
        overrides["encoder_chunk_sequences"] = args.encoder_chunk_sequences
    return overrides


def saved_bytes(args, layers: int) -> int:
    """Bytes held for the backward pass after the forward and loss of one sample."""
    import torch

    from segatron_fairseq.evaluation.activation_memory import SavedTensorBytes

    torch.manual_seed(0)
    dictionary = synthetic_dictionary(args.vocab)
    model = build_registered_model(ARCHS[args.variant], dictionary, args.sequence_length + 80, torch.device("cpu"),
                                   **width_overrides(args, layers))
    model.to({"float32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.bfloat16}[args.dtype])
    shape = (1, args.num_sequences, args.sequence_length)
    tokens = torch.randint(4, args.vocab, shape, generator=torch.Generator().manual_seed(1))
    masked = torch.rand(shape, generator=torch.Generator().manual_seed(2)) < 0.15
    if args.variant == "roberta":
        tokens, masked = tokens.view(-1, args.sequence_length), masked.view(-1, args.sequence_length)
    with SavedTensorBytes() as saved:
        logits, _ = model(tokens, masked_tokens=masked)
        torch.nn.functional.cross_entropy(logits.float(), tokens[masked], reduction="sum")
    return saved.bytes


def activation_memory(args) -> None:
    print(f"bytes kept for the backward pass of one sample of {args.num_sequences} x {args.sequence_length} tokens, "
          f"width {args.dim}, {args.dtype} weights, extrapolated from 1 and 2 layers to {args.layers}"
          f"{f', Cross-Thought chunks of {args.encoder_chunk_sequences}' if args.encoder_chunk_sequences else ''}:")
    for variant in ARCHS:
        args.variant = variant
        one, two = saved_bytes(args, 1), saved_bytes(args, 2)
        total = one + (two - one) * (args.layers - 1)
        print(f"  {variant:<14} {total / 2**30:8.2f} GiB  ({(two - one) / 2**30:.2f} GiB per layer)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50000)
    p.add_argument("--num-sequences", type=int, default=500)
    p.add_argument("--sequence-length", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1)
    add_timing_options(p, list(ARCHS), steps=5, warmup=1)
    p.add_argument("--encoder-chunk-sequences", type=int, default=0,
                   help="Cross-Thought's --encoder-chunk-sequences (checkpointed chunks; 0: off)")
    p.add_argument("--activation-memory", action="store_true",
                   help="print the backward-pass memory of one sample instead of timing")
    args = p.parse_args()
    if args.activation_memory:
        activation_memory(args)
        return
    if args.variant:
        print(json.dumps(measure(args)))
        return
    best = run_interleaved(__file__, sys.argv[1:], list(ARCHS), args.repeats)
    print(f"\nwidth {args.dim}, {args.layers} layers, "
          f"{args.batch_size} x {args.num_sequences} x {args.sequence_length} tokens per step, "
          f"{args.dtype} on {best['roberta']['device']}")
    report(best["roberta"], best["cross_thought"], "target >= 0.80x")


if __name__ == "__main__":
    main()
