#!/usr/bin/env bash
# The demo: install if needed, binarize a generated WikiText-style corpus with
# segatron-preprocess, pre-train a tiny SegaBERT (the examples in docs/segabert.md
# and docs/segatron-xl.md use it), then train three tiny language models of the same
# size, steps and seed with fairseq-train (Transformer-XL; Segatron-XL with Eq. 3
# distances; Segatron-XL with the authors' distances), score them with fairseq-eval-lm
# and by kind of target token, and print the table, what it shows, and pictures.
#
#   bash scripts/demo.sh               # generated corpus, in demo_runs/
#   bash scripts/demo.sh --data DIR    # your segatron-preprocess output (train/valid/test)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

bash "$ROOT/scripts/install.sh"
PY="$ROOT/.venv/bin/python"
RUNS="$ROOT/demo_runs"
mkdir -p "$RUNS"
"$ROOT/.venv/bin/segatron-components"

VARIANTS=(transformer_xl segatron_xl segatron_xl_window_end)
GENERATED=()
if [[ -z "$DATA" ]]; then
  echo "== generating a corpus (WikiText layout) in $RUNS/corpus"
  "$PY" -m segatron_preprocess.demo_corpus "$RUNS/corpus" --train-documents 400
  DATA="$RUNS/data-bin"
  GENERATED=(--generated-corpus)
  echo "== segatron-preprocess -> $DATA"
  "$ROOT/.venv/bin/segatron-preprocess" --input-format wikitext --workers 2 --destdir "$DATA" \
    --trainpref "$RUNS/corpus/wiki.train.tokens" --validpref "$RUNS/corpus/wiki.valid.tokens" \
    --testpref "$RUNS/corpus/wiki.test.tokens" 2>&1 | grep -E "\] |splitter|dictionary"
  "$ROOT/.venv/bin/segatron-inspect" "$DATA" valid 5 | head -24
fi

echo "== fairseq-train: a tiny SegaBERT masked LM on the same corpus"
mkdir -p "$RUNS/models"
"$ROOT/.venv/bin/fairseq-train" "$DATA" --user-dir "$ROOT/segatron_fairseq" --task segabert_mlm \
  --arch segabert_tiny --criterion masked_lm --optimizer adam --lr 2e-3 --lr-scheduler inverse_sqrt \
  --warmup-updates 50 --tokens-per-sample 128 --batch-size 16 --max-update 300 --seed 1 --num-workers 0 \
  --save-dir "$RUNS/models/segabert" --no-epoch-checkpoints --log-format simple --log-interval 100 \
  2>&1 | tee "$RUNS/models/segabert.log" | grep -E "valid on|done training"

echo "== Transformer-XL, Segatron-XL with Eq. 3 distances, Segatron-XL with the authors' distances"
echo "   (tiny, same size, steps and seed; fairseq-train, fairseq-eval-lm, then the test split by kind of target token)"
"$ROOT/.venv/bin/segatron-compare-lm" --data "$DATA" --variants "$(IFS=,; echo "${VARIANTS[*]}")" \
  --workdir "$RUNS/models" --layers 2 --dim 64 --heads 4 --ffn 256 --tgt-len 48 --mem-len 48 \
  --batch-size 16 --max-update 1200 --warmup 100 --lr 2e-3 --validate-every 100 \
  --out "$RUNS/results.json" --overwrite
echo
"$PY" -m segatron_fairseq.cli.demo_summary "$RUNS/results.json" "${GENERATED[@]}"

echo
echo "== segatron-plot: pictures of this run"
PLOT="$ROOT/.venv/bin/segatron-plot"
LOGS=()
for variant in "${VARIANTS[@]}"; do LOGS+=("$RUNS/models/$variant/train.log"); done
"$PLOT" curves "${LOGS[@]}" --labels "$(IFS=,; echo "${VARIANTS[*]}")" --splits valid \
  --out "$RUNS/valid_curves" --overwrite
"$PLOT" boundary-kinds "$RUNS/results.json" --out "$RUNS/boundary_kinds" --overwrite
if [[ ${#GENERATED[@]} -gt 0 ]]; then
  "$PLOT" attention --model-dir "$RUNS/models/segatron_xl" --checkpoint-file checkpoint_last.pt --data "$DATA" \
    --text "$RUNS/corpus/wiki.valid.tokens" --layer 1 --max-tokens 48 --out "$RUNS/attention" --overwrite
fi
echo "logs, checkpoints and results.json are in $RUNS"
