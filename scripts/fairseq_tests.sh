#!/usr/bin/env bash
# Run fairseq's own tests (its tests/ at the v0.12.2 tag) against the patched fairseq in .venv.
#
#   git clone https://github.com/facebookresearch/fairseq /tmp/fairseq && git -C /tmp/fairseq checkout v0.12.2
#   bash scripts/fairseq_tests.sh /tmp/fairseq [pytest arguments, e.g. -n 2 or -x]
#
# The sdist this project installs has no tests, and fairseq's are not copied into this repository: give a checkout
# outside it (or in a git-ignored folder). Its tests/ are copied to a temporary folder and run from there, so that
# `import fairseq` is the installed, patched package and never the checkout's fairseq/ (checked before the run). The
# selection: dictionaries, iterators, token blocks, checkpoints, sequence generation and scoring, training, and
# test_binaries' language-model, masked-LM and transformer translation end-to-end tests, less the deselected ones
# below (each with its reason). Not run by CI: about 20 minutes on two cores, nearly all of it test_binaries.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
die() { echo "fairseq_tests: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: bash scripts/fairseq_tests.sh FAIRSEQ_CHECKOUT [pytest arguments]"
[[ -d "$1" ]] || die "$1: not a directory (a checkout of facebookresearch/fairseq at tag v0.12.2)"
CHECKOUT="$(cd "$1" && pwd)"
shift
[[ -f "$CHECKOUT/tests/test_binaries.py" && -d "$CHECKOUT/examples" ]] ||
  die "$CHECKOUT: not a fairseq checkout (no tests/test_binaries.py or examples/)"
[[ "$(cat "$CHECKOUT/fairseq/version.txt" 2>/dev/null)" == "0.12.2" ]] ||
  die "$CHECKOUT: not fairseq 0.12.2 (fairseq/version.txt); check out the tag v0.12.2"
[[ -x "$PY" ]] || die "$ROOT/.venv missing; run bash scripts/install.sh first"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -r "$CHECKOUT/tests" "$WORK/tests"
# test_binaries passes --user-dir examples/<name>/<name>_src (linformer, truncated_bptt), relative to the working folder
ln -s "$CHECKOUT/examples" "$WORK/examples"
printf '[pytest]\n' > "$WORK/pytest.ini"  # the rootdir: no ini file or conftest of a folder above applies
# every test imports the installed fairseq, or the run stops before its first test
cat > "$WORK/conftest.py" <<'EOF'
import os

import fairseq


def pytest_sessionstart(session):
    where = os.path.realpath(fairseq.__file__)
    if not where.startswith(os.environ["FAIRSEQ_TESTS_SITE"] + os.sep):
        raise SystemExit(f"fairseq_tests: error: the tests import fairseq from {where}, not the installed package")
    print(f"fairseq {fairseq.__version__} from {os.path.dirname(where)}")
EOF
export FAIRSEQ_TESTS_SITE
FAIRSEQ_TESTS_SITE="$("$PY" -c 'import os, sysconfig; print(os.path.realpath(sysconfig.get_paths()["purelib"]))')"

TRANSLATION=(test_transformer test_multilingual_transformer test_transformer_cross_self_attention
             test_transformer_pointer_generator test_cmlm_transformer test_nonautoregressive_transformer
             test_iterative_nonautoregressive_transformer test_insertion_transformer test_laser_transformer
             test_transformer_layerdrop)
SELECTION=(tests/test_dictionary.py tests/test_iterators.py tests/test_token_block_dataset.py
           tests/test_checkpoint_utils.py tests/test_sequence_generator.py tests/test_sequence_scorer.py
           tests/test_train.py tests/test_binaries.py::TestLanguageModeling
           tests/test_binaries.py::TestMaskedLanguageModel)
for test in "${TRANSLATION[@]}"; do SELECTION+=("tests/test_binaries.py::TestTranslation::$test"); done

DESELECT=(
  # needs fairseq.libnat, a C++ extension whose source the 0.12.2 sdist does not ship (the patched build compiles
  # only the Cython modules and libbleu)
  tests/test_binaries.py::TestTranslation::test_insertion_transformer
  # a GPU: CUDA tensors; the first and last also fairseq's CUDA extension ngram_repeat_block_cuda, which is not built
  # (they skip themselves without CUDA)
  tests/test_sequence_generator.py::TestRepeatNgramBlocking::test_finds_repetitive_tokens
  tests/test_sequence_generator.py::TestRepeatNgramBlocking::test_jit_no_extension
  tests/test_sequence_generator.py::TestRepeatNgramBlocking::test_ngram_blocking_same_as_default_implem
  # mocks PathManager.open and torch.load inside load_ema_from_checkpoint, which the patch replaced by
  # load_checkpoint_file (a weights_only load of the local file): it opens the mocked path for real and finds no
  # file. tests/project/test_untrusted_checkpoints.py loads a real EMA checkpoint through the patched loader
  tests/test_checkpoint_utils.py::TestCheckpointUtils::test_load_ema_from_checkpoint
)
DESELECT_ARGS=()
for test in "${DESELECT[@]}"; do DESELECT_ARGS+=(--deselect "$test"); done

cd "$WORK"
echo "fairseq_tests: fairseq's tests from $CHECKOUT, run in $WORK with $PY"
start=$SECONDS
status=0
"$PY" -m pytest -p no:cacheprovider -q -rfEs "${SELECTION[@]}" "${DESELECT_ARGS[@]}" "$@" || status=$?
echo "fairseq_tests: $((SECONDS - start)) s, pytest exit status $status"
exit "$status"
