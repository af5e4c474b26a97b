#!/usr/bin/env bash
# Install if needed, then run the test suite. The exit status is pytest's
# (exit 5, "no tests collected", counts as a failure).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/install.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest "$ROOT/tests" "$@"
