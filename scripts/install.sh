#!/usr/bin/env bash
# Create .venv with torch, a patched fairseq 0.12.2 and this package (editable).
#
# Idempotent: a stamp in .venv records what was installed; a second run with the
# same inputs only checks the imports and returns in seconds.
#
# Environment:
#   SEGATRON_TORCH_SPEC  pip requirement for torch (default: torch==2.13.0, the CPU
#                        wheel). A GPU user sets e.g. SEGATRON_TORCH_SPEC='torch==2.5.1'
#                        and, where needed, PIP_EXTRA_INDEX_URL for the CUDA wheels.
#   PYTHON               interpreter used to create .venv (default: python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${SEGATRON_TORCH_SPEC:-torch==2.13.0}"
FAIRSEQ_VERSION="0.12.2"
FAIRSEQ_SHA256="34f1b18426bf3844714534162f065ab733e049597476daa35fffb4d06a92b524"
PATCH="$ROOT/scripts/patches/fairseq-${FAIRSEQ_VERSION}-py311.patch"
RUNTIME_PACKAGES=(
  "hydra-core==1.3.2" "omegaconf==2.3.0" "sentencepiece" "nltk" "bitarray"
  "sacrebleu>=1.4.12" "regex" "cffi" "tqdm" "pytest" "pytest-xdist"
  "scikit-learn" "scipy" "tensorboardX" "matplotlib" "tokenizers" "safetensors" "pytorch-crf"
)
# seqeval ships only an sdist whose setup_requires fetches the newest setuptools_scm, which no longer builds it that
# way: it is built in the venv (--no-build-isolation) with a setuptools_scm that does
SOURCE_ONLY_PACKAGES=("seqeval==1.2.2")
# the oracles of the checkpoint importers and exporters: the Hugging Face classes that read and write those
# formats (4.35.2: the last release before Transformer-XL was deprecated); sacremoses for its Transformer-XL tokenizer;
# ruff, the linter .ci/run runs (settings in pyproject.toml)
TEST_PACKAGES=("transformers==4.35.2" "sacremoses" "ruff==0.17.6")
# exports must also load, with equal outputs, in the newest transformers, which needs a huggingface-hub that
# 4.35.2 refuses: it lives in a second environment inside .venv, with the same torch (tests/transformers_newest.py)
NEWEST_TRANSFORMERS="transformers==5.24.0"
# what the exported tokenizers' remote code imports besides transformers (the binarizer's modules, shipped with them)
REMOTE_CODE_PACKAGES=("sentencepiece" "nltk")

log() { echo "[install] $*"; }
die() { echo "[install] error: $*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "'$PYTHON' not found; install Python >= 3.10 or set PYTHON=/path/to/python3"
"$PYTHON" - <<'EOF' || die "Python >= 3.10 is required (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11"
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
EOF

stamp_inputs() {
  {
    echo "$TORCH_SPEC"
    echo "${RUNTIME_PACKAGES[*]} ${SOURCE_ONLY_PACKAGES[*]} ${TEST_PACKAGES[*]} $NEWEST_TRANSFORMERS ${REMOTE_CODE_PACKAGES[*]}"
    cat "$PATCH" "$ROOT/scripts/install.sh" "$ROOT/setup.py"
  } | sha256sum | cut -d' ' -f1
}
STAMP="$VENV/.segatron-install"
WANT="$(stamp_inputs)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] &&
   "$VENV/bin/python" -c "import fairseq, segatron_fairseq, segatron_preprocess" 2>/dev/null; then
  log "up to date ($VENV)"
  exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV with $("$PYTHON" --version)"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

log "installing $TORCH_SPEC and build requirements"
"${PIP[@]}" install -q "$TORCH_SPEC" "numpy" "cython" "setuptools" "wheel"

# fairseq is rebuilt only when the patch or the torch it is built against changes.
FAIRSEQ_STAMP="$VENV/.segatron-fairseq-build"
FAIRSEQ_WANT="$( (echo "$TORCH_SPEC"; cat "$PATCH") | sha256sum | cut -d' ' -f1)"
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
  log "patching fairseq for Python 3.11 / torch >= 2.6 ($PATCH)"
  patch -s -p1 -d "$BUILD" < "$PATCH"
  log "building fairseq $FAIRSEQ_VERSION (Cython modules, libbleu; about a minute)"
  "${PIP[@]}" install -q --no-deps --no-build-isolation --force-reinstall "$BUILD"
  rm -rf "$BUILD"
  echo "$FAIRSEQ_WANT" > "$FAIRSEQ_STAMP"
fi

log "installing runtime and test requirements"
# torch is pinned by what is installed: a constraint keeps pip from replacing it.
TORCH_INSTALLED="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
"${PIP[@]}" install -q "${RUNTIME_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "torch==$TORCH_INSTALLED"
"${PIP[@]}" install -q "setuptools_scm<9"
"${PIP[@]}" install -q --no-build-isolation "${SOURCE_ONLY_PACKAGES[@]}"

log "installing segatron_fairseq (editable)"
"${PIP[@]}" install -q --no-deps --no-build-isolation -e "$ROOT"

NEWEST="$VENV/transformers-newest"
log "installing $NEWEST_TRANSFORMERS beside it ($NEWEST)"
[[ -x "$NEWEST/bin/python" ]] || "$PYTHON" -m venv "$NEWEST"
"$NEWEST/bin/python" -m pip --disable-pip-version-check install -q "$NEWEST_TRANSFORMERS" "${REMOTE_CODE_PACKAGES[@]}" \
  "torch==$TORCH_INSTALLED"
"$NEWEST/bin/python" -c "import transformers, torch" || die "$NEWEST: transformers does not import"

"$VENV/bin/python" -c "import fairseq, segatron_fairseq, segatron_preprocess, fairseq.data.data_utils_fast, fairseq.data.token_block_utils_fast, torchcrf, seqeval.metrics" ||
  die "the installed packages do not import"
echo "$WANT" > "$STAMP"
log "done: fairseq $("$VENV/bin/python" -c 'import fairseq; print(fairseq.__version__)'), torch $TORCH_INSTALLED in $VENV"
