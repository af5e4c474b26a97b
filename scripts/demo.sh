#!/usr/bin/env bash
# Install if needed, then show what the plugin registers in fairseq.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/install.sh"
"$ROOT/.venv/bin/segatron-components"
