#!/usr/bin/env bash
# Install if needed (with the test requirements: install.sh --test), then run the test suite, each run
# printing its 25 slowest tests.
#
#   bash scripts/test.sh           everything (CI): two tests at a time (pytest-xdist; the subprocesses
#                                  the tests start use one thread each), then the memory-heavy tests alone,
#                                  one at a time
#   bash scripts/test.sh --quick   the quick tier: every module's behaviour in this process (tiny models
#                                  built in the test process), two at a time; no end-to-end runs of
#                                  fairseq's commands or the console scripts (-m "not end_to_end")
#
# Extra arguments go to every pytest run. The exit status is the first failing run's (exit 5, "no tests
# collected", counts as a failure unless the other run collected tests).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUICK=0
if [[ "${1:-}" == "--quick" ]]; then
  QUICK=1
  shift
fi
bash "$ROOT/scripts/install.sh" --test || exit 1
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
# torch's CPU allocator backs allocations of 2 MB and more with transparent huge pages: the memory-heavy
# runs' 4 GB tensors fault in 512 times fewer pages (the WikiText-103-large yamls: 45 s -> 28 s each)
export THP_MEM_ALLOC_ENABLE=1
if [[ $QUICK -eq 1 ]]; then
  exec "$PY" -m pytest -n 2 --durations=25 -m "not end_to_end and not memory_heavy" "$ROOT/tests" "$@"
fi
"$PY" -m pytest -n 2 --durations=25 -m "not memory_heavy" "$ROOT/tests" "$@"; parallel=$?
# only the modules that mark tests memory-heavy are collected for this run
mapfile -t HEAVY < <(grep -rl --include='test_*.py' 'mark.memory_heavy' "$ROOT/tests")
"$PY" -m pytest --durations=25 -m memory_heavy "${HEAVY[@]:-$ROOT/tests}" "$@"; alone=$?
if [[ $parallel -eq 5 && $alone -eq 0 ]]; then parallel=0; fi
if [[ $alone -eq 5 && $parallel -eq 0 ]]; then alone=0; fi
if [[ $parallel -ne 0 ]]; then exit "$parallel"; fi
exit "$alone"
