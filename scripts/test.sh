#!/usr/bin/env bash
# Install if needed, then run the test suite: two tests at a time (pytest-xdist; the
# subprocesses the tests start use one thread each), then the memory-heavy tests alone,
# one at a time. Extra arguments go to both pytest runs. The exit status is the first
# failing run's (exit 5, "no tests collected", counts as a failure unless the other
# run collected tests).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/install.sh" || exit 1
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
"$PY" -m pytest -n 2 -m "not memory_heavy" "$ROOT/tests" "$@"; parallel=$?
"$PY" -m pytest -m memory_heavy "$ROOT/tests" "$@"; alone=$?
if [[ $parallel -eq 5 && $alone -eq 0 ]]; then parallel=0; fi
if [[ $alone -eq 5 && $parallel -eq 0 ]]; then alone=0; fi
if [[ $parallel -ne 0 ]]; then exit "$parallel"; fi
exit "$alone"
