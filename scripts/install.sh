#!/usr/bin/env bash
# Create .venv with torch, a patched fairseq 0.12.2 and this package (editable).
#
#   bash scripts/install.sh          what using the plugin needs: torch, fairseq, the runtime packages
#   bash scripts/install.sh --test   also what the tests need (scripts/test.sh passes it): pytest, the
#                                    oracles transformers==4.35.2 and sacremoses, ruff, and the newest
#                                    transformers in .venv/transformers-newest, which shares .venv's torch
#
# Idempotent: stamps in .venv record what was installed; a second run with the
# same inputs only checks the imports and returns in seconds.
#
# Environment:
#   SEGATRON_TORCH_SPEC   pip requirement for torch (default: torch==2.13.0: on Linux the package
#                         index's CUDA build, on macOS and Windows its CPU build).
#   SEGATRON_TORCH_INDEX  an index to take torch from instead of the package index, for example
#                         https://download.pytorch.org/whl/cpu (the CPU build on Linux) or
#                         https://download.pytorch.org/whl/cu126 (a CUDA 12.6 build).
#   PYTHON                interpreter used to create .venv (default: python3; 3.10 to 3.13).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${SEGATRON_TORCH_SPEC:-torch==2.13.0}"
TORCH_INDEX="${SEGATRON_TORCH_INDEX:-}"
TEST=0
case "${1:-}" in
  "") ;;
  --test) TEST=1 ;;
  -h|--help) sed -n 2,18p "$0"; exit 0 ;;
  *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac
FAIRSEQ_VERSION="0.12.2"
FAIRSEQ_SHA256="34f1b18426bf3844714534162f065ab733e049597476daa35fffb4d06a92b524"
PATCH="$ROOT/scripts/patches/fairseq-${FAIRSEQ_VERSION}-py311.patch"
RUNTIME_PACKAGES=(
  "hydra-core==1.3.2" "omegaconf==2.3.0" "sentencepiece" "nltk" "bitarray"
  "sacrebleu>=1.4.12" "regex" "cffi" "tqdm"
  "scikit-learn" "scipy" "tensorboardX" "matplotlib" "tokenizers" "safetensors" "pytorch-crf"
)
# seqeval ships only an sdist whose setup_requires fetches the newest setuptools_scm, which no longer builds it that
# way: it is built in the venv (--no-build-isolation) with a setuptools_scm that does
SOURCE_ONLY_PACKAGES=("seqeval==1.2.2")
# with --test: the test runner; the oracles of the checkpoint importers and exporters, the Hugging Face classes that
# read and write those formats (4.35.2: the last release before Transformer-XL was deprecated); sacremoses for its
# Transformer-XL tokenizer; ruff, the linter .ci/run runs (settings in pyproject.toml)
TEST_PACKAGES=("pytest" "pytest-xdist" "transformers==4.35.2" "sacremoses" "ruff==0.17.6")
# with --test: exports must also load, with equal outputs, in the newest transformers, which needs a huggingface-hub
# that 4.35.2 refuses: it lives in a second environment inside .venv that imports .venv's torch
# (scripts/share_packages.py) and installs the rest itself (tests/transformers_newest.py runs it)
# (5.21 and newer need Python 3.11: on 3.10, 5.20.2, the last release for it)
NEWEST_TRANSFORMERS="transformers==5.24.0"
NEWEST_TRANSFORMERS_PY310="transformers==5.20.2"
# what the exported tokenizers' remote code imports besides transformers (the binarizer's modules, shipped with them)
REMOTE_CODE_PACKAGES=("sentencepiece" "nltk")

log() { echo "[install] $*"; }
die() { echo "[install] error: $*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "'$PYTHON' not found; install Python >= 3.10 or set PYTHON=/path/to/python3"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
  die "Python >= 3.10 is required (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11"

# a stamp holds the hash of what its part installs from: a second run with the same inputs installs nothing
stamp_inputs() {
  { echo "$TORCH_SPEC $TORCH_INDEX"; echo "$@"; cat "$PATCH" "$ROOT/scripts/install.sh" "$ROOT/setup.py"; } |
    sha256sum | cut -d' ' -f1
}
STAMP="$VENV/.segatron-install"
WANT="$(stamp_inputs "${RUNTIME_PACKAGES[*]} ${SOURCE_ONLY_PACKAGES[*]}")"
TEST_STAMP="$VENV/.segatron-install-test"
TEST_WANT="$(stamp_inputs "${TEST_PACKAGES[*]} $NEWEST_TRANSFORMERS ${REMOTE_CODE_PACKAGES[*]}")"
NEWEST="$VENV/transformers-newest"
IMPORTS="import fairseq, segatron_fairseq, segatron_preprocess, fairseq.data.data_utils_fast"
IMPORTS+=", fairseq.data.token_block_utils_fast, torchcrf, seqeval.metrics"
TEST_IMPORTS="import pytest, xdist, transformers, sacremoses"

runtime_current() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] && "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null
}
test_current() {
  [[ -f "$TEST_STAMP" && "$(cat "$TEST_STAMP")" == "$TEST_WANT" ]] &&
    "$VENV/bin/python" -c "$TEST_IMPORTS" 2>/dev/null && "$NEWEST/bin/python" -c "import transformers, torch" 2>/dev/null
}
# both parts checked side by side (each check starts interpreters that import torch)
all_current() {
  local runtime tests=0
  runtime_current & runtime=$!
  if [[ $TEST -eq 1 ]]; then test_current & tests=$!; fi
  wait "$runtime" || return 1
  [[ $TEST -eq 0 ]] || wait "$tests"
}
if all_current; then
  log "up to date ($VENV)"
  exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV with $("$PYTHON" --version)"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

if ! runtime_current; then
  rm -f "$STAMP" "$TEST_STAMP"
  log "installing $TORCH_SPEC${TORCH_INDEX:+ from $TORCH_INDEX} and build requirements"
  if [[ -n "$TORCH_INDEX" ]]; then
    "${PIP[@]}" install -q --index-url "$TORCH_INDEX" "$TORCH_SPEC"
  fi
  "${PIP[@]}" install -q "$TORCH_SPEC" "numpy" "cython" "setuptools" "wheel"

  # fairseq is rebuilt only when the patch or the torch it is built against changes.
  FAIRSEQ_STAMP="$VENV/.segatron-fairseq-build"
  FAIRSEQ_WANT="$( (echo "$TORCH_SPEC $TORCH_INDEX"; cat "$PATCH") | sha256sum | cut -d' ' -f1)"
  if [[ ! -f "$FAIRSEQ_STAMP" || "$(cat "$FAIRSEQ_STAMP")" != "$FAIRSEQ_WANT" ]] ||
     ! "$VENV/bin/python" -c "import fairseq, sys; sys.exit(fairseq.__version__ != '$FAIRSEQ_VERSION')" 2>/dev/null; then
    SRC="$VENV/src"
    mkdir -p "$SRC"
    SDIST="$SRC/fairseq-$FAIRSEQ_VERSION.tar.gz"
    if [[ ! -f "$SDIST" ]]; then
      log "downloading the fairseq $FAIRSEQ_VERSION sdist from the package index"
      # --no-build-isolation: metadata is prepared with the torch installed above,
      # never with a second torch pulled into an isolated build environment.
      "${PIP[@]}" download -q --no-deps --no-binary :all: --no-build-isolation \
        "fairseq==$FAIRSEQ_VERSION" -d "$SRC.tmp"
      mv "$SRC.tmp/fairseq-$FAIRSEQ_VERSION.tar.gz" "$SDIST"
      rm -rf "$SRC.tmp"
    fi
    echo "$FAIRSEQ_SHA256  $SDIST" | sha256sum -c --quiet - ||
      { rm -f "$SDIST"; die "checksum mismatch for $SDIST (removed; run again)"; }

    BUILD="$SRC/fairseq-$FAIRSEQ_VERSION"
    rm -rf "$BUILD"
    tar -xzf "$SDIST" -C "$SRC"
    log "patching fairseq for Python 3.10-3.13, numpy 2 and torch >= 2.6 ($PATCH)"
    patch -s -p1 -d "$BUILD" < "$PATCH"
    log "building fairseq $FAIRSEQ_VERSION (Cython modules, libbleu; about a minute)"
    "${PIP[@]}" install -q --no-deps --no-build-isolation --force-reinstall "$BUILD"
    rm -rf "$BUILD"
    echo "$FAIRSEQ_WANT" > "$FAIRSEQ_STAMP"
  fi

  log "installing the runtime requirements"
  # torch stays at the version pip installed: its distribution's version (scripts/pinned_requirements.py)
  TORCH_PIN="$("$VENV/bin/python" "$ROOT/scripts/pinned_requirements.py" torch)"
  "${PIP[@]}" install -q "${RUNTIME_PACKAGES[@]}" "$TORCH_PIN"
  "${PIP[@]}" install -q "setuptools_scm<9"
  "${PIP[@]}" install -q --no-build-isolation "${SOURCE_ONLY_PACKAGES[@]}"

  log "installing segatron_fairseq (editable)"
  "${PIP[@]}" install -q --no-deps --no-build-isolation -e "$ROOT"
  "$VENV/bin/python" -c "$IMPORTS" || die "the installed packages do not import"
  echo "$WANT" > "$STAMP"
fi
TORCH_PIN="$("$VENV/bin/python" "$ROOT/scripts/pinned_requirements.py" torch)"

if [[ $TEST -eq 1 ]] && ! test_current; then
  log "installing the test requirements: ${TEST_PACKAGES[*]}"
  "${PIP[@]}" install -q "${TEST_PACKAGES[@]}" "$TORCH_PIN"

  if ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    NEWEST_TRANSFORMERS="$NEWEST_TRANSFORMERS_PY310"
  fi
  log "installing $NEWEST_TRANSFORMERS beside it ($NEWEST), with .venv's torch"
  # made anew by .venv's interpreter: both run the same Python, so they can share compiled packages
  rm -rf "$NEWEST"
  "$VENV/bin/python" -m venv "$NEWEST"
  SHARED="$NEWEST/shared-from-venv"
  "$VENV/bin/python" "$ROOT/scripts/share_packages.py" "$SHARED" torch >/dev/null
  NEWEST_SITE="$("$NEWEST/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$SHARED" > "$NEWEST_SITE/shared-from-venv.pth"
  "$NEWEST/bin/python" -m pip --disable-pip-version-check install -q "$NEWEST_TRANSFORMERS" \
    "${REMOTE_CODE_PACKAGES[@]}" "$TORCH_PIN"
  "$NEWEST/bin/python" -c "import transformers, torch" || die "$NEWEST: transformers does not import"
  "$VENV/bin/python" -c "$TEST_IMPORTS" || die "the test requirements do not import"
  echo "$TEST_WANT" > "$TEST_STAMP"
fi
log "done: fairseq $("$VENV/bin/python" -c 'import fairseq; print(fairseq.__version__)'), $TORCH_PIN in $VENV"
