"""Training step throughput: SegaBERT vs fairseq's RoBERTa at the same width and length.

    python scripts/bench_segabert.py [--arch-size base] [--layers 12] [--batch-size 8] [--seq-len 512]
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
import os
import sys
import time
from types import SimpleNamespace

from bench_common import peak_memory_mib, report, run_interleaved

ARCHS = {"roberta": "roberta_base", "segabert": "segabert_base"}


def measure(args) -> dict:
    import torch
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import segatron_fairseq  # noqa: F401  (registers segabert)

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    dictionary = Dictionary()
    for i in range(args.vocab - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    arch = ARCHS[args.variant]
    model_args = SimpleNamespace(encoder_layers=args.layers, max_positions=args.seq_len)
    ARCH_CONFIG_REGISTRY[arch](model_args)
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary,
                           max_positions=lambda: args.seq_len)
    model = ARCH_MODEL_REGISTRY[arch].build_model(model_args, task).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.dtype)
    scaler = torch.amp.GradScaler(enabled=args.dtype == "fp16")

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

    batches = [batch() for _ in range(args.steps + args.warmup)]

    def step(tokens, paragraph, sentence, token, masked):
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits, _ = model(tokens, masked_tokens=masked, paragraph_index=paragraph, sentence_index=sentence,
                              token_index=token)
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
    return {"variant": args.variant, "tokens_per_s": args.steps * args.batch_size * args.seq_len / elapsed,
            "peak_mib": peak_memory_mib(device), "params": sum(p.numel() for p in model.parameters()),
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--dtype", choices=("float32", "bf16", "fp16"), default="float32")
    p.add_argument("--variant", choices=list(ARCHS), help=argparse.SUPPRESS)
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
