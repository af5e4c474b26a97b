"""Training step throughput: the cloze two-tower model vs SegaBERT at the same width and tokens.

    python scripts/benchmarks/bench_cloze_two_tower.py [--width 768] [--heads 12] [--layers 12] [--batch-size 8]
                                     [--seq-len 512] [--steps 10] [--repeats 2] [--dtype float32|bf16|fp16]

SegaBERT (``segabert_base``: ``--layers`` layers) against the cloze two-tower
model (``cloze_two_tower_base``: ``--layers`` / 2 blocks per tower, so as many
blocks in all, plus its combination block), both ``--width`` wide with
``--heads`` heads and a feed-forward 4 x the width, from fairseq's
registries. Each step is forward, loss, backward and an Adam step on the same
synthetic batches: SegaBERT's masked LM scores 15% of the tokens, the cloze
model every token, so the report gives targets/s next to tokens/s. Every
variant runs in a fresh process, interleaved over ``--repeats`` rounds; the
best round counts.
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

ARCHS = {"segabert": "segabert_base", "cloze_two_tower": "cloze_two_tower_base"}
MASK_FRACTION = 0.15


def measure(args) -> dict:
    import torch

    torch.manual_seed(0)
    device = setup_device(args.threads)
    dictionary = synthetic_dictionary(args.vocab)
    if args.variant == "segabert":
        sizes = dict(encoder_layers=args.layers, encoder_embed_dim=args.width, encoder_ffn_embed_dim=4 * args.width,
                     encoder_attention_heads=args.heads)
    else:
        sizes = dict(decoder_layers=args.layers // 2, decoder_embed_dim=args.width,
                     decoder_ffn_embed_dim=4 * args.width, decoder_attention_heads=args.heads,
                     max_target_positions=args.seq_len)
    model = build_registered_model(ARCHS[args.variant], dictionary, args.seq_len, device, **sizes)
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, args.seq_len)

    def batch():
        tokens = torch.randint(4, args.vocab, shape, generator=generator)
        masked = torch.rand(shape, generator=generator) < MASK_FRACTION
        indexes = [torch.zeros(shape, dtype=torch.long) for _ in range(3)]
        return [t.to(device) for t in (tokens, masked, *indexes)]

    def segabert_loss(tokens, masked, paragraph, sentence, token):
        logits, _ = model(tokens, masked_tokens=masked, paragraph_index=paragraph, sentence_index=sentence,
                          token_index=token)
        return torch.nn.functional.cross_entropy(logits.float(), tokens[masked], reduction="sum")

    def cloze_loss(tokens, masked, *indexes):
        return -model.log_probs(model(tokens)["cloze"], tokens).sum()

    batches = [batch() for _ in range(args.steps + args.warmup)]
    loss_of_batch = segabert_loss if args.variant == "segabert" else cloze_loss
    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device)
    tokens = args.steps * args.batch_size * args.seq_len
    targets = sum(int(b[1].sum()) for b in batches[args.warmup:]) if args.variant == "segabert" else tokens
    measured = result(args.variant, tokens, seconds, model, device)
    measured["targets_per_s"] = targets / seconds
    return measured


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--layers", type=int, default=12, help="SegaBERT's layers; the cloze model has half per tower")
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=512)
    add_timing_options(p, list(ARCHS))
    args = p.parse_args()
    if args.layers < 2 or args.layers % 2:
        p.error(f"--layers {args.layers}: an even number of at least 2 (the cloze model has half per tower)")
    if args.variant:
        print(json.dumps(measure(args)))
        return
    best = run_interleaved(__file__, sys.argv[1:], list(ARCHS), args.repeats)
    print(f"\nwidth {args.width}, {args.layers} layers (cloze: {args.layers // 2} per tower), batch "
          f"{args.batch_size} x {args.seq_len}, {args.dtype} on {best['segabert']['device']}")
    report(best["segabert"], best["cloze_two_tower"], "tokens")
    ratio = best["cloze_two_tower"]["targets_per_s"] / best["segabert"]["targets_per_s"]
    print(f"targets/s: segabert {best['segabert']['targets_per_s']:,.0f} (15% of the tokens), cloze_two_tower "
          f"{best['cloze_two_tower']['targets_per_s']:,.0f} (every token): {ratio:.3f}x")


if __name__ == "__main__":
    main()
