"""Training step throughput: SegaBERT vs fairseq's RoBERTa at the same width and length.

    python scripts/benchmarks/bench_segabert.py [--arch-size base] [--layers 12] [--batch-size 8] [--seq-len 512]
                                     [--steps 10] [--repeats 2] [--dtype float32|bf16|fp16]

Both models come from fairseq's registries (``segabert_base`` and
``roberta_base``, layers overridable); each step is forward, the masked-LM loss
on 15% of the tokens, backward and an Adam step, on synthetic examples whose
paragraph / sentence / token indexes look like Wikipedia's. Every variant runs
in a fresh process, interleaved over ``--repeats`` rounds; the best round
counts. Target: SegaBERT at most 5% slower.
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

ARCHS = {"roberta": "roberta_base", "segabert": "segabert_base"}


def measure(args) -> dict:
    import torch

    torch.manual_seed(0)
    device = setup_device(args.threads)
    dictionary = synthetic_dictionary(args.vocab)
    model = build_registered_model(ARCHS[args.variant], dictionary, args.seq_len, device, encoder_layers=args.layers)
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, args.seq_len)

    def batch():
        tokens = torch.randint(4, args.vocab, shape, generator=generator)
        sentence_start = torch.rand(shape, generator=generator) < 1 / 25
        paragraph_start = sentence_start & (torch.rand(shape, generator=generator) < 1 / 4)
        paragraph = paragraph_start.long().cumsum(1).clamp(max=49)
        sentence_number = sentence_start.long().cumsum(1)
        first_of_paragraph = torch.cummax(torch.where(paragraph_start, sentence_number, 0), dim=1).values
        sentence = (sentence_number - first_of_paragraph).clamp(max=99)
        positions = torch.arange(args.seq_len).expand(shape)
        last_start = torch.cummax(torch.where(sentence_start, positions, 0), dim=1).values
        token = (positions - last_start).clamp(max=255)
        masked = torch.rand(shape, generator=generator) < 0.15
        return [t.to(device) for t in (tokens, paragraph, sentence, token, masked)]

    def loss_of_batch(tokens, paragraph, sentence, token, masked):
        logits, _ = model(tokens, masked_tokens=masked, paragraph_index=paragraph, sentence_index=sentence,
                          token_index=token)
        return torch.nn.functional.cross_entropy(logits.float(), tokens[masked], reduction="sum")

    batches = [batch() for _ in range(args.steps + args.warmup)]
    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device)
    return result(args.variant, args.steps * args.batch_size * args.seq_len, seconds, model, device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=512)
    add_timing_options(p, list(ARCHS))
    args = p.parse_args()
    if args.variant:
        print(json.dumps(measure(args)))
        return
    best = run_interleaved(__file__, sys.argv[1:], list(ARCHS), args.repeats)
    print(f"\nwidth 768, {args.layers} layers, batch {args.batch_size} x {args.seq_len}, {args.dtype} "
          f"on {best['roberta']['device']}")
    report(best["roberta"], best["segabert"], "target >= 0.95")


if __name__ == "__main__":
    main()
