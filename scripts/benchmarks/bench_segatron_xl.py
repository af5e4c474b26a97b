"""Training throughput and peak memory: Segatron-XL vs Transformer-XL, same code and width.

    python scripts/benchmarks/bench_segatron_xl.py [--layers 4] [--dim 410] [--vocab 20000] [--cutoffs A,B]
                                        [--batch-size 8] [--tgt-len 150] [--mem-len 150] [--steps 20] [--repeats 2]
                                        [--dtype float32|bf16|fp16] [--compile-layers] [--authors-code DIR]

Each measurement runs in a fresh process (so peak memory is its own): forward,
the ``segatron_lm_loss`` criterion, backward and an Adam step on a synthetic
Zipfian stream (``synthetic_stream``) whose sentence and paragraph starts
follow WikiText-103's averages (a sentence every ~25 tokens, a paragraph every
~4 sentences), with the memory carried across steps. Variants are interleaved
over ``--repeats`` rounds and the best round
counts. bf16 / fp16 cast the model, as fairseq's --fp16 does. Prints tokens/s,
peak memory and Segatron-XL / Transformer-XL ratios.

With ``--authors-code DIR`` (a checkout of github.com/rsvp-ai/segatron_aaai's
``segatron-xl`` folder, not part of this project) a third variant runs: the
authors' ``SegaMemTransformerLM`` imported from DIR, on the same configuration
and stream and with their train.py's step (authors_segatron_xl.py), and a second
report gives Segatron-XL / authors' ratios (target >= 2.0).
"""
import argparse
import json
import os
import sys
from types import SimpleNamespace

from bench_common import (
    add_timing_options,
    report,
    result,
    run_interleaved,
    setup_device,
    synthetic_dictionary,
    time_training,
)

VARIANTS = {"transformer_xl": (True, True), "segatron_xl": (False, False)}  # (no_sentence, no_paragraph)
AUTHORS = "authors_segatron_xl"


def synthetic_stream(args) -> list:
    """``warmup + steps`` consecutive batches (tokens, sentence starts, paragraph starts), each (B, T) on the
    CPU. Token ids follow Zipf's law over the vocabulary (id 4 the most frequent, as in a fairseq dictionary),
    so the targets fall into the adaptive softmax's bands about as often as in real text (about 20% beyond
    the first cutoff of WikiText-103's); a sentence starts every ~25 tokens, a paragraph every ~4 sentences."""
    import torch

    generator = torch.Generator().manual_seed(1)
    shape = (args.batch_size, args.tgt_len)
    frequency = 1.0 / torch.arange(1, args.vocab - 3, dtype=torch.float64)
    batches = []
    for _ in range(args.warmup + args.steps):
        tokens = 4 + torch.multinomial(frequency, shape[0] * shape[1], replacement=True, generator=generator)
        sentence = torch.rand(shape, generator=generator) < 1 / 25
        paragraph = sentence & (torch.rand(shape, generator=generator) < 1 / 4)
        batches.append((tokens.view(shape), sentence, paragraph))
    return batches


def measure(args) -> dict:
    import torch
    from fairseq import utils
    from fairseq.modules import AdaptiveInput

    from segatron_fairseq.criterions.segatron_lm_loss import SegatronLMLoss
    from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLDecoder, SegatronXLModel

    torch.manual_seed(0)
    device = setup_device(args.threads)
    dictionary = synthetic_dictionary(args.vocab)
    no_sentence, no_paragraph = VARIANTS[args.variant]
    cutoff = (utils.eval_str_list(args.cutoffs, type=int) if args.cutoffs
              else [args.vocab // 10, args.vocab // 2])
    cfg = SegatronXLConfig(decoder_layers=args.layers, decoder_embed_dim=args.dim,
                           decoder_attention_heads=args.heads, decoder_head_dim=args.dim // args.heads,
                           decoder_ffn_embed_dim=args.ffn, mem_len=args.mem_len, dropout=0.1,
                           no_sentence_part=no_sentence, no_paragraph_part=no_paragraph,
                           adaptive_softmax_cutoff=",".join(map(str, cutoff)), adaptive_input=True,
                           tie_adaptive_weights=True, tie_adaptive_proj=True, compile_layers=args.compile_layers)
    embed = AdaptiveInput(len(dictionary), dictionary.pad(), args.dim, 1.0, args.dim, cutoff)
    model = SegatronXLModel(SegatronXLDecoder(cfg, dictionary, embed)).to(device).train()
    criterion = SegatronLMLoss(SimpleNamespace(target_dictionary=dictionary), sentence_avg=False)

    def loss_of_batch(tokens, sentence, paragraph):
        sample = {"net_input": {"src_tokens": tokens, "sentence_starts": sentence, "paragraph_starts": paragraph},
                  "target": tokens.roll(-1, dims=1)}
        return criterion(model, sample)[0]

    batches = [[t.to(device) for t in batch] for batch in synthetic_stream(args)]
    seconds = time_training(model, loss_of_batch, batches, args.warmup, args.dtype, device, cast_model=True)
    return result(args.variant, args.steps * args.batch_size * args.tgt_len, seconds, model, device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=410)
    p.add_argument("--heads", type=int, default=10)
    p.add_argument("--ffn", type=int, default=2100)
    p.add_argument("--vocab", type=int, default=20000)
    p.add_argument("--cutoffs", help="adaptive softmax cutoffs (default: vocab/10, vocab/2); "
                                     "WikiText-103: --vocab 267735 --cutoffs 20000,40000,200000")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--tgt-len", type=int, default=150)
    p.add_argument("--mem-len", type=int, default=150)
    add_timing_options(p, [*VARIANTS, AUTHORS], steps=20, warmup=3)
    p.add_argument("--compile-layers", action="store_true",
                   help="the model's --compile-layers (torch.compile of each layer; GPU only)")
    p.add_argument("--authors-code", metavar="DIR",
                   help="also time the Segatron authors' SegaMemTransformerLM from this checkout of "
                        "github.com/rsvp-ai/segatron_aaai's segatron-xl folder")
    args = p.parse_args()
    if args.authors_code and not os.path.isfile(os.path.join(args.authors_code, "mem_transformer.py")):
        p.error(f"--authors-code {args.authors_code}: no mem_transformer.py (give their segatron-xl folder)")
    if args.variant == AUTHORS:
        from authors_segatron_xl import measure_authors

        print(json.dumps(measure_authors(args)))
        return
    if args.variant:
        print(json.dumps(measure(args)))
        return
    variants = [*VARIANTS, AUTHORS] if args.authors_code else list(VARIANTS)
    best = run_interleaved(__file__, sys.argv[1:], variants, args.repeats)
    xl, seg = best["transformer_xl"], best["segatron_xl"]
    print(f"\n{args.layers} layers, d={args.dim}, batch {args.batch_size} x {args.tgt_len}, mem {args.mem_len}, "
          f"{args.dtype} on {xl['device']}")
    report(xl, seg, "target >= 0.90")
    if args.authors_code:
        print()
        report(best[AUTHORS], seg, "target >= 2.0")


if __name__ == "__main__":
    main()
