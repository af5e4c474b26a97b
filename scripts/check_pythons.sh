#!/usr/bin/env bash
# Install a clean clone with each Python found and check it works there: the quick tier, then a short
# segatron-preprocess -> fairseq-train -> fairseq-eval-lm run. Not run by CI: each interpreter gets its own
# torch from the package index (the CUDA build on Linux, about 5 GB).
#
#   bash scripts/check_pythons.sh                      # python3.10 ... python3.13, on PATH or under pyenv
#   bash scripts/check_pythons.sh /usr/bin/python3.12  # the interpreters named
#
# Environment: WORKDIR (default /tmp/segatron-check-pythons: one clone a Python, kept for a rerun),
# SEGATRON_TORCH_SPEC and SEGATRON_TORCH_INDEX as for install.sh. The clone is of HEAD (commit first).
# Prints one line a Python (version, torch, install time and size, quick tier, the run's perplexity)
# and writes them to WORKDIR/results.md; the exit status is 1 when any check failed.
set -uo pipefail
# all in one function, read whole before it runs: the checkout may change meanwhile
main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  WORKDIR="${WORKDIR:-/tmp/segatron-check-pythons}"
  if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n 2,12p "$0"; exit 0; fi

  PYTHONS=("$@")
  if [[ ${#PYTHONS[@]} -eq 0 ]]; then
    for minor in 10 11 12 13; do
      found="$(command -v "python3.$minor" || true)"
      # a pyenv shim is on PATH for every version pyenv has, and runs only the ones selected
      if [[ -n "$found" ]] && ! "$found" -c "" 2>/dev/null; then found=""; fi
      if [[ -z "$found" ]] && command -v pyenv >/dev/null; then
        found="$(ls -d "$(pyenv root)"/versions/3."$minor".*/bin/python3."$minor" 2>/dev/null | sort -V | tail -1)"
      fi
      [[ -n "$found" ]] && PYTHONS+=("$found")
    done
  fi
  [[ ${#PYTHONS[@]} -gt 0 ]] || { echo "check_pythons: no python3.10 ... python3.13 found" >&2; exit 1; }

  mkdir -p "$WORKDIR"
  RESULTS="$WORKDIR/results.md"
  {
    echo "Commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u +%Y-%m-%d), $(uname -sm)"
    echo
    echo "| Python | torch | install (runtime + test) | .venv (runtime + test) | quick tier | preprocess -> train -> eval-lm |"
    echo "|---|---|---|---|---|---|"
  } > "$RESULTS"
  status=0

  for python in "${PYTHONS[@]}"; do
    version="$("$python" -c 'import platform; print(platform.python_version())')" ||
      { echo "check_pythons: $python does not run" >&2; status=1; continue; }
    clone="$WORKDIR/py$version"
    log="$WORKDIR/py$version.log"
    echo "== Python $version ($python): $clone, log in $log"
    rm -rf "$clone"
    git clone -q "$ROOT" "$clone"
    [[ -e "$ROOT/../shared" && ! -e "$WORKDIR/shared" ]] && ln -s "$(cd "$ROOT/../shared" && pwd)" "$WORKDIR/shared"

    start=$SECONDS
    install="failed"; torch="-"; size="-"
    if PYTHON="$python" bash "$clone/scripts/install.sh" > "$log" 2>&1; then
      install="$((SECONDS - start)) s"
      torch="$("$clone/.venv/bin/python" "$clone/scripts/pinned_requirements.py" torch | cut -d= -f3)"
      size="$(du -sh "$clone/.venv" | cut -f1)"
      start=$SECONDS
      if bash "$clone/scripts/install.sh" --test >> "$log" 2>&1; then
        install+=" + $((SECONDS - start)) s --test"
        size+=" + $(du -sh "$clone/.venv/transformers-newest" | cut -f1) newest, $(du -sh "$clone/.venv" | cut -f1) in all"
      else
        install+=" + --test failed"
      fi
    fi
    [[ "$install" == *failed* ]] && status=1

    quick="-"
    if [[ "$install" != *failed* ]]; then
      start=$SECONDS
      bash "$clone/scripts/test.sh" --quick -q -p no:cacheprovider >> "$log" 2>&1
      rc=$?
      counts="$(grep -E '(passed|failed|error).* in [0-9.]+s' "$log" | tail -1 | sed -E 's/^=+ //; s/, [0-9]+ warnings?//; s/ in [0-9.]+s.*//')"
      quick="${counts:-no summary} ($((SECONDS - start)) s$([[ $rc -ne 0 ]] && echo ", exit $rc"))"
      [[ $rc -eq 0 ]] || status=1
    fi

    run="-"
    if [[ "$install" != *failed* ]]; then
      bin="$clone/.venv/bin"
      work="$clone/smoke"
      rm -rf "$work"
      if {
        "$bin/python" -m segatron_preprocess.demo_corpus "$work/corpus" --train-documents 40 &&
        "$bin/segatron-preprocess" --input-format wikitext --workers 2 --destdir "$work/bin" \
          --trainpref "$work/corpus/wiki.train.tokens" --validpref "$work/corpus/wiki.valid.tokens" &&
        "$bin/fairseq-train" "$work/bin" --user-dir "$clone/segatron_fairseq" --task segatron_lm \
          --arch segatron_xl_tiny --criterion segatron_lm_loss --tgt-len 32 --mem-len 32 --batch-size 8 \
          --optimizer adam --lr 2e-3 --max-update 20 --save-dir "$work/ckpt" --no-epoch-checkpoints --cpu \
          --num-workers 0 --log-format simple --log-interval 10 --seed 1 &&
        "$bin/fairseq-eval-lm" "$work/bin" --user-dir "$clone/segatron_fairseq" --task segatron_lm \
          --path "$work/ckpt/checkpoint_last.pt" --gen-subset valid --batch-size 1 --tgt-len 32 --cpu
      } > "$work.log" 2>&1; then
        run="$(grep -oE 'Perplexity: [0-9.]+' "$work.log" | tail -1)"
      else
        run="failed (see $work.log)"; status=1
      fi
      cat "$work.log" >> "$log"
    fi
    line="| $version | $torch | $install | $size | $quick | $run |"
    echo "$line"
    echo "$line" >> "$RESULTS"
  done
  echo "== results in $RESULTS"
  cat "$RESULTS"
  exit $status
}
main "$@"
