"""Sampling speed of Segatron-XL and Transformer-XL: incremental decoding against a full recompute.

    python scripts/benchmarks/bench_generation.py [--layers 4 --dim 256 --heads 8 --ffn 1024]
        [--prompt 150 --new-tokens 512 --mem-len 150 --tgt-len 150 --vocab 10000 --repeats 3] [--batch-size 1]

Models of the given size (randomly initialised: speed does not depend on the
weights) sample ``--new-tokens`` tokens after a ``--prompt``-token prompt,
one row, with ``segatron_fairseq.generation.sampling.sample_tokens`` (``--batch-size`` above 1: that many
rows decoded greedily together, ``measure_rows``): once with the
key/value cache (``incremental``) and once recomputing a full forward over the
window for every token (``naive``). The window is capped at mem_len + tgt_len
positions, as in the hub. New tokens get sentence / paragraph starts from a
fixed synthetic rule, so both models read the same flags. Prints tokens/s,
incremental / naive, and Segatron-XL / Transformer-XL (targets: >= 10x at 512
tokens, >= 0.9x). It also times one pass of a single row through every linear
layer of the model and the output layer: a new token cannot cost less than
reading all the weights once, the floor of incremental decoding on a CPU.
"""
import argparse
import time

from bench_common import setup_device, synthetic_dictionary


def build(args, dictionary, segment_parts: bool, device):
    from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLModel

    cfg = SegatronXLConfig(decoder_layers=args.layers, decoder_embed_dim=args.dim,
                           decoder_attention_heads=args.heads, decoder_head_dim=args.dim // args.heads,
                           decoder_ffn_embed_dim=args.ffn, mem_len=args.mem_len, dropout=0.0,
                           no_sentence_part=not segment_parts, no_paragraph_part=not segment_parts)
    task = argparse.Namespace(target_dictionary=dictionary, source_dictionary=dictionary)
    return SegatronXLModel.build_model(cfg, task).to(device).eval()


def synthetic_flags(token: int):
    """A sentence starts at every 13th symbol, a paragraph at every 91st."""
    return token % 13 == 0, token % 91 == 0


def measure(model, prompt, args, incremental: bool) -> float:
    """Tokens/s of one sampling run."""
    import torch

    from segatron_fairseq.generation.sampling import sample_tokens

    if args.batch_size > 1:
        return measure_rows(model, prompt, args, incremental)
    starts = [synthetic_flags(t) for t in prompt]
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    tokens = sample_tokens(model, prompt, starts, args.new_tokens, synthetic_flags, args.mem_len + args.tgt_len,
                           topk=50, generator=generator, incremental=incremental)
    seconds = time.perf_counter() - start
    assert len(tokens) == args.new_tokens
    return args.new_tokens / seconds


def measure_rows(model, prompt, args, incremental: bool) -> float:
    """Tokens/s (all rows together) of greedy decoding of ``--batch-size`` rows that all start from
    ``prompt``: ``prime_decoding`` then ``decode_step`` per token (incremental), or a forward over the
    window (at most mem_len + tgt_len positions) per token (naive)."""
    import torch

    decoder, device = model.decoder, next(model.parameters()).device
    rows, window = args.batch_size, args.mem_len + args.tgt_len
    inputs = torch.tensor(prompt, device=device).expand(rows, -1)
    flags = torch.tensor([synthetic_flags(t) for t in prompt], device=device).T[:, None].expand(-1, rows, -1)
    vocabulary = torch.tensor([synthetic_flags(t) for t in range(args.vocab)], device=device)  # (V, 2)

    def pick(features):  # (B, d) -> (B,) the most likely next token
        output = decoder.output_layer(features[:, None])
        return model.get_normalized_probs((output, None), log_probs=True)[:, 0].argmax(-1)

    model.reset_memory(training=False)
    start = time.perf_counter()
    with torch.no_grad():
        if incremental:
            features, cache = decoder.prime_decoding(inputs, flags[0], flags[1])
        for step in range(args.new_tokens):
            if incremental:
                token = pick(features)
                if step == args.new_tokens - 1:
                    break
                cache.keep_last(window - 1)
                starts = vocabulary[token]
                features = decoder.decode_step(token, {"sentence": starts[:, 0], "paragraph": starts[:, 1]}, cache)
            else:
                model.reset_memory(training=False)
                features = decoder.extract_features(inputs[:, -window:], flags[0][:, -window:],
                                                    flags[1][:, -window:])[:, -1]
                token = pick(features)
                inputs = torch.cat([inputs, token[:, None]], dim=1)
                flags = torch.cat([flags, vocabulary[token].T[:, :, None]], dim=2)
    if device.type == "cuda":
        torch.cuda.synchronize()
    model.reset_memory(training=False)
    return rows * args.new_tokens / (time.perf_counter() - start)


def weight_floor_seconds(model, repeats: int = 20) -> float:
    """Seconds for one row through every nn.Linear and the output layer: reading each weight once."""
    import torch

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    embed = model.decoder.embed_tokens.weight
    with torch.no_grad():
        rows = [torch.randn(1, m.in_features) for m in linears]
        start = time.perf_counter()
        for _ in range(repeats):
            for m, row in zip(linears, rows):
                m(row)
            torch.nn.functional.linear(torch.randn(1, embed.size(1)), embed)
    return (time.perf_counter() - start) / repeats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--prompt", type=int, default=150, help="prompt tokens")
    parser.add_argument("--new-tokens", type=int, default=512, help="tokens sampled")
    parser.add_argument("--mem-len", type=int, default=150)
    parser.add_argument("--tgt-len", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=1,
                        help="rows decoded together; above 1, greedy decoding of that many rows (all rows' tokens "
                             "count)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3,
                        help="incremental runs per model, alternating between the models (the best counts)")
    args = parser.parse_args()
    import torch

    device = setup_device(args.threads)
    torch.manual_seed(0)
    dictionary = synthetic_dictionary(args.vocab)
    prompt = torch.randint(dictionary.nspecial, len(dictionary), (args.prompt,)).tolist()
    models = {name: build(args, dictionary, segment_parts, device)
              for name, segment_parts in (("segatron_xl", True), ("transformer_xl", False))}
    # the incremental runs alternate between the models; the best of --repeats counts
    results = {(name, "incremental"): 0.0 for name in models}
    for _ in range(args.repeats):
        for name, model in models.items():
            results[name, "incremental"] = max(results[name, "incremental"], measure(model, prompt, args, True))
    for name, model in models.items():
        results[name, "naive"] = measure(model, prompt, args, False)
        for mode in ("incremental", "naive"):
            print(f"{name:<16} {mode:<12} {results[name, mode]:>10,.1f} tokens/s", flush=True)
    if device.type == "cpu":
        floor = 1 / weight_floor_seconds(models["segatron_xl"])
    print(f"{args.batch_size} row(s), {args.new_tokens} tokens after {args.prompt}, {args.layers} layers, "
          f"d={args.dim}, window {args.mem_len + args.tgt_len}, {device.type}:")
    if device.type == "cpu":
        print(f"  reading every weight once per token: at most {floor:,.1f} tokens/s; incremental segatron_xl "
              f"reaches {results['segatron_xl', 'incremental'] / floor:.0%} of that")
    for name in ("segatron_xl", "transformer_xl"):
        print(f"  {name}: incremental / naive = {results[name, 'incremental'] / results[name, 'naive']:.1f}x "
              f"(target >= 10x)")
    print(f"  incremental segatron_xl / transformer_xl = "
          f"{results['segatron_xl', 'incremental'] / results['transformer_xl', 'incremental']:.2f}x (target >= 0.9x)")


if __name__ == "__main__":
    main()
