#!/usr/bin/env bash
# The demo: install if needed, binarize a generated WikiText-style corpus with
# segatron-preprocess, train a tiny Segatron-XL and the Transformer-XL of the same
# size with fairseq-train, score both with fairseq-eval-lm, print a perplexity table,
# then pre-train a tiny SegaBERT (the examples in docs/segabert.md and docs/segatron-xl.md use it).
#
#   bash scripts/demo.sh               # generated corpus, in demo_runs/
#   bash scripts/demo.sh --data DIR    # your segatron-preprocess output (train/valid/test)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

bash "$ROOT/scripts/install.sh"
PY="$ROOT/.venv/bin/python"
RUNS="$ROOT/demo_runs"
mkdir -p "$RUNS"
"$ROOT/.venv/bin/segatron-components"

if [[ -z "$DATA" ]]; then
  echo "== generating a corpus (WikiText layout) in $RUNS/corpus"
  "$PY" -m segatron_preprocess.demo_corpus "$RUNS/corpus" --train-documents 400
  DATA="$RUNS/data-bin"
  echo "== segatron-preprocess -> $DATA"
  "$ROOT/.venv/bin/segatron-preprocess" --input-format wikitext --workers 2 --destdir "$DATA" \
    --trainpref "$RUNS/corpus/wiki.train.tokens" --validpref "$RUNS/corpus/wiki.valid.tokens" \
    --testpref "$RUNS/corpus/wiki.test.tokens" 2>&1 | grep -E "\] |splitter|dictionary"
  "$ROOT/.venv/bin/segatron-inspect" "$DATA" valid 5 | head -24
fi

echo "== fairseq-train / fairseq-eval-lm: Segatron-XL vs Transformer-XL (tiny, same size, steps and seed)"
"$ROOT/.venv/bin/segatron-compare-lm" --data "$DATA" --variants segatron_xl,transformer_xl \
  --workdir "$RUNS/models" --layers 2 --dim 64 --heads 4 --ffn 256 --tgt-len 48 --mem-len 48 \
  --batch-size 16 --max-update 1200 --warmup 100 --lr 2e-3 --out "$RUNS/results.json"
echo "== fairseq-train: a tiny SegaBERT masked LM on the same corpus"
"$ROOT/.venv/bin/fairseq-train" "$DATA" --user-dir "$ROOT/segatron_fairseq" --task segabert_mlm \
  --arch segabert_tiny --criterion masked_lm --optimizer adam --lr 2e-3 --lr-scheduler inverse_sqrt \
  --warmup-updates 50 --tokens-per-sample 128 --batch-size 16 --max-update 300 --seed 1 \
  --save-dir "$RUNS/models/segabert" --no-epoch-checkpoints --log-format simple --log-interval 100 \
  2>&1 | tee "$RUNS/models/segabert.log" | grep -E "valid on|done training"
echo "logs, checkpoints and results.json are in $RUNS"
