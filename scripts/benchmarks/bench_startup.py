"""Start-up cost of the plugin: how long fairseq's commands take to answer with and without ``--user-dir``.

    python scripts/benchmarks/bench_startup.py [--repeats 7] [--command fairseq-train]

Runs ``COMMAND --help`` and ``COMMAND --user-dir segatron_fairseq --help`` in fresh processes, interleaved
over rounds (both see the same machine), and prints the fastest and the median wall time of each and
their difference: what importing the plugin adds to every fairseq command. It also lists the heavy
libraries the plugin run has imported by the time it answers (none is expected: scipy, scikit-learn,
matplotlib and transformers are imported where they are used).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from segatron_fairseq import PLUGIN_DIR

HEAVY = ("scipy", "sklearn", "matplotlib", "transformers")
# what `COMMAND --user-dir ... --help` has imported when it answers, printed by the interpreter at exit
REPORT_HEAVY = ("import atexit, sys; atexit.register(lambda: print('heavy:', ' '.join(m for m in "
                f"{HEAVY!r} if m in sys.modules) or 'none', file=sys.stderr))")


def timed_run(argv, env) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def heavy_modules(command: Path) -> str:
    """The heavy libraries loaded by ``command --user-dir PLUGIN_DIR --help``, run through this interpreter."""
    code = f"{REPORT_HEAVY}; import runpy; sys.argv = {[str(command), '--user-dir', PLUGIN_DIR, '--help']!r}; " \
           f"runpy.run_path({str(command)!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("heavy:")]
    return lines[-1].split(":", 1)[1].strip() if lines else f"unknown (exit {proc.returncode})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="rounds of the two runs")
    parser.add_argument("--command", default="fairseq-train", help="a fairseq console script in this environment")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    command = Path(sys.executable).parent / args.command
    if not command.is_file():
        parser.error(f"{command}: no such console script next to this interpreter")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    variants = {"fairseq alone": [str(command), "--help"],
                "with the plugin": [str(command), "--user-dir", PLUGIN_DIR, "--help"]}
    times = {name: [] for name in variants}
    for round_number in range(args.repeats):
        for name, argv in variants.items():
            times[name].append(timed_run(argv, env))
        print(f"round {round_number + 1}: " + "  ".join(f"{name} {times[name][-1]:.2f} s" for name in variants),
              flush=True)
    print(f"\n{args.command} --help, {args.repeats} rounds")
    print(f"{'':<16} {'fastest':>8} {'median':>8}")
    for name, values in times.items():
        print(f"{name:<16} {min(values):>7.2f}s {statistics.median(values):>7.2f}s")
    alone, plugin = (min(values) for values in times.values())
    print(f"the plugin adds {plugin - alone:+.2f} s to the fastest start ({plugin / alone:.2f}x)")
    print(f"heavy libraries loaded with the plugin: {heavy_modules(command)}")


if __name__ == "__main__":
    main()
