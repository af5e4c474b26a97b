"""Time segatron-preprocess against fairseq-preprocess --only-source on one file.

    python scripts/benchmarks/bench_binarizer.py FILE [--min-tokens 10000000] [--workers 2]

FILE is repeated until it holds at least --min-tokens whitespace tokens; both
tools then binarize it as the training split (each building its dictionary)
with the same --workers, in this one run, and the wall times and their ratio
are printed (target: segatron-preprocess at most 1.5x fairseq-preprocess).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

BIN = os.path.dirname(sys.executable)


def repeated_copy(path: str, min_tokens: int, out_dir: str) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tokens = len(text.split())
    copies = max(1, -(-min_tokens // tokens))
    out = os.path.join(out_dir, "input.txt")
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(copies):
            f.write(text)
    print(f"input: {path} x {copies} = {tokens * copies:,} tokens, {os.path.getsize(out) / 2**20:.1f} MiB")
    return out


def timed(name: str, cmd) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{name} failed:\n{proc.stdout[-4000:]}")
    print(f"{name:<20} {elapsed:8.1f} s")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--min-tokens", type=int, default=10_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--input-format", default="wikitext")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = repeated_copy(args.file, args.min_tokens, tmp)
        workers = ["--workers", str(args.workers)]
        fairseq = timed("fairseq-preprocess", [os.path.join(BIN, "fairseq-preprocess"), "--only-source",
                        "--trainpref", data, "--destdir", os.path.join(tmp, "fairseq"), *workers])
        ours = timed("segatron-preprocess", [os.path.join(BIN, "segatron-preprocess"), "--input-format",
                     args.input_format, "--trainpref", data, "--destdir", os.path.join(tmp, "ours"), *workers])
        same = all(
            open(os.path.join(tmp, "fairseq", f), "rb").read() == open(os.path.join(tmp, "ours", f), "rb").read()
            for f in ("dict.txt", "train.bin", "train.idx")
        )
    print(f"workers {args.workers}: segatron-preprocess / fairseq-preprocess = {ours / fairseq:.2f}x "
          f"(target <= 1.5x); token datasets identical: {same}")


if __name__ == "__main__":
    main()
