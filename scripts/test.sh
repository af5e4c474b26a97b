#!/usr/bin/env bash
# Install if needed, then run the test suite, two tests at a time (pytest-xdist; the
# subprocesses the tests start use one thread each). The exit status is pytest's
# (exit 5, "no tests collected", counts as a failure).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/install.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest -n 2 --dist loadgroup "$ROOT/tests" "$@"
