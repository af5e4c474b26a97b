"""Training step throughput: XLNet (token and Segatron positions) vs Segatron-XL at the same width.

    python scripts/benchmarks/bench_xlnet.py [--width 768] [--heads W/64] [--layers 12] [--vocab 32000]
                                [--batch-size 4] [--seq-len 512] [--mem-len 384] [--reuse-len L/2]
                                [--num-predict L/6] [--steps 10] [--repeats 2] [--dtype float32|bf16|fp16]

Three models ``--width`` wide with ``--layers`` layers, ``--heads`` heads, a
feed-forward 4 x the width and a full softmax tied to the embeddings, on the
same synthetic Zipfian stream (a sentence every ~25 tokens, a paragraph every
~4 sentences), with ``--mem-len`` of memory carried across steps:
Segatron-XL (the ``segatron_lm_loss`` criterion, every position predicted),
and XLNet with ``--positions token`` and ``--positions segatron`` (the
``xlnet_plm`` criterion; each step one sample of ``--seq-len`` positions
starting ``--reuse-len`` after the last, ``--num-predict`` targets in spans, a
random factorization order, as ``PermutationLMDataset`` draws them). Each step
is forward, loss, backward and an Adam step; tokens/s counts the ``--seq-len``
positions of every row a step. Every variant runs in a fresh process,
interleaved over ``--repeats`` rounds; the best round counts.
"""
import argparse
import json
import sys
from types import SimpleNamespace

from bench_common import (
    add_timing_options,
    result,
    run_interleaved,
    setup_device,
    synthetic_dictionary,
    time_training,
)

VARIANTS = ("segatron_xl", "xlnet_token", "xlnet_segatron")


def synthetic_stream(args, length: int):
    """(B, length) tokens (Zipfian over the vocabulary, id 4 the most frequent), sentence starts (one every
    ~25 tokens) and paragraph starts (one every ~4 sentences), on the CPU."""
    import torch

    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, length)
    frequency = 1.0 / torch.arange(1, args.vocab - 3, dtype=torch.float64)
    tokens = 4 + torch.multinomial(frequency, shape[0] * shape[1], replacement=True, generator=generator)
    sentence = torch.rand(shape, generator=generator) < 1 / 25
    paragraph = sentence & (torch.rand(shape, generator=generator) < 1 / 4)
    return tokens.view(shape), sentence, paragraph


def segatron_xl_batches(args, steps: int) -> list:
    tokens, sentence, paragraph = synthetic_stream(args, steps * args.seq_len)
    return [[t[:, i * args.seq_len:(i + 1) * args.seq_len] for t in (tokens, sentence, paragraph)]
            for i in range(steps)]


def xlnet_batches(args, steps: int, pad: int) -> list:
    """Per step: tokens, perm_mask, target_mapping, segment ids, sentence and paragraph starts, targets."""
    import numpy as np
    import torch

    from segatron_fairseq.data.permutation_lm import permutation_sample, second_segment

    tokens, sentence, paragraph = synthetic_stream(args, (steps - 1) * args.reuse_len + args.seq_len)
    rng = np.random.default_rng(2)
    batches = []
    for step in range(steps):
        cols = slice(step * args.reuse_len, step * args.reuse_len + args.seq_len)
        perm_masks, mappings, segments, targets = [], [], [], []
        for row in range(args.batch_size):
            perm_mask, positions = permutation_sample(args.seq_len, args.reuse_len, args.num_predict, rng)
            mapping = torch.zeros(args.num_predict, args.seq_len)
            mapping[torch.arange(len(positions)), torch.from_numpy(positions)] = 1
            target = torch.full((args.num_predict,), pad, dtype=torch.long)
            target[:len(positions)] = tokens[row, cols][torch.from_numpy(positions)]
            perm_masks.append(torch.from_numpy(perm_mask))
            mappings.append(mapping)
            segments.append(torch.from_numpy(second_segment(sentence[row, cols].numpy(), args.reuse_len,
                                                            args.seq_len, rng)))
            targets.append(target)
        batches.append([tokens[:, cols], torch.stack(perm_masks), torch.stack(mappings), torch.stack(segments),
                        sentence[:, cols], paragraph[:, cols], torch.stack(targets)])
    return batches


def measure(args) -> dict:
    import torch

    from segatron_fairseq.criterions.segatron_lm_loss import SegatronLMLoss
    from segatron_fairseq.criterions.xlnet_plm import XLNetPLMCriterion
    from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLModel
    from segatron_fairseq.models.xlnet import XLNetConfig, XLNetModel

    torch.manual_seed(0)
    device = setup_device(args.threads)
    dictionary = synthetic_dictionary(args.vocab)
    task = SimpleNamespace(target_dictionary=dictionary)
    steps = args.warmup + args.steps
    if args.variant == "segatron_xl":
        cfg = SegatronXLConfig(decoder_layers=args.layers, decoder_embed_dim=args.width,
                               decoder_attention_heads=args.heads, decoder_head_dim=args.width // args.heads,
                               decoder_ffn_embed_dim=4 * args.width, mem_len=args.mem_len, dropout=0.1)
        model = SegatronXLModel.build_model(cfg, task).to(device).train()
        criterion = SegatronLMLoss(task, sentence_avg=False)

        def loss_of_batch(tokens, sentence, paragraph):
            sample = {"net_input": {"src_tokens": tokens, "sentence_starts": sentence,
                                    "paragraph_starts": paragraph}, "target": tokens.roll(-1, dims=1)}
            return criterion(model, sample)[0]

        batches = segatron_xl_batches(args, steps)
    else:
        cfg = XLNetConfig(encoder_layers=args.layers, encoder_embed_dim=args.width, encoder_attention_heads=args.heads,
                          encoder_head_dim=args.width // args.heads, encoder_ffn_embed_dim=4 * args.width,
                          mem_len=args.mem_len, positions=args.variant.split("_")[1])
        model = XLNetModel.build_model(cfg, task).to(device).train()
        criterion = XLNetPLMCriterion(task)

        def loss_of_batch(tokens, perm_mask, target_mapping, segment_ids, sentence, paragraph, target):
            sample = {"net_input": {"src_tokens": tokens, "perm_mask": perm_mask, "target_mapping": target_mapping,
                                    "segment_ids": segment_ids, "sentence_starts": sentence,
                                    "paragraph_starts": paragraph, "reuse_len": args.reuse_len},
                      "target": target}
            return criterion(model, sample)[0]

        batches = xlnet_batches(args, steps, dictionary.pad())
    batches = [[t.to(device) for t in batch] for batch in batches]
    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device, cast_model=True)
    return result(args.variant, args.steps * args.batch_size * args.seq_len, seconds, model, device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, help="attention heads (default: width / 64)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--mem-len", type=int, default=384)
    p.add_argument("--reuse-len", type=int, help="XLNet's reuse part (default: seq-len / 2)")
    p.add_argument("--num-predict", type=int, help="XLNet's targets a row (default: seq-len / 6, K = 6)")
    add_timing_options(p, VARIANTS)
    args = p.parse_args()
    args.heads = args.heads or max(1, args.width // 64)
    args.reuse_len = args.reuse_len or args.seq_len // 2
    args.num_predict = args.num_predict or args.seq_len // 6
    if args.width % args.heads:
        p.error(f"--heads {args.heads}: must divide --width {args.width}")
    if args.variant:
        print(json.dumps(measure(args)))
        return
    best = run_interleaved(__file__, sys.argv[1:], list(VARIANTS), args.repeats)
    base = best["segatron_xl"]
    print(f"\nwidth {args.width}, {args.heads} heads, {args.layers} layers, batch {args.batch_size} x {args.seq_len}, "
          f"mem {args.mem_len}, XLNet reuse {args.reuse_len}, {args.num_predict} targets, {args.dtype} on "
          f"{base['device']}")
    print(f"{'model':<16} {'tokens/s':>12} {'peak MiB':>10} {'params':>12} {'vs segatron_xl':>15}")
    for variant in VARIANTS:
        r = best[variant]
        print(f"{variant:<16} {r['tokens_per_s']:>12,.0f} {r['peak_mib']:>10,.0f} {r['params']:>12,} "
              f"{r['tokens_per_s'] / base['tokens_per_s']:>14.3f}x")


if __name__ == "__main__":
    main()
