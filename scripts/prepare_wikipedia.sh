#!/usr/bin/env bash
# Binarize a Wikipedia dump extracted by WikiExtractor with --json (folders AA, AB, ...
# of wiki_00, wiki_01, ... files, one JSON document per line with a "text" field)
# for SegaBERT pre-training, with a sentencepiece model trained on it.
#
#   bash scripts/prepare_wikipedia.sh EXTRACTED_DIR [DESTDIR] [VOCAB_SIZE] [WORKERS]
#
# The last 1000 documents (in file order) become the valid split.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="${1:?usage: prepare_wikipedia.sh EXTRACTED_DIR [DESTDIR] [VOCAB_SIZE] [WORKERS]}"
DEST="${2:-data-bin/wikipedia}"
VOCAB="${3:-32000}"
WORKERS="${4:-$(nproc)}"
[[ -d "$SRC" ]] || { echo "prepare_wikipedia.sh: $SRC is not a directory" >&2; exit 1; }
mapfile -t FILES < <(find "$SRC" -type f -name 'wiki_*' | sort)
[[ ${#FILES[@]} -gt 0 ]] || { echo "prepare_wikipedia.sh: no wiki_* files under $SRC" >&2; exit 1; }
mkdir -p "$DEST"
WORK="$(mktemp -d "$DEST/.jsonl.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cat "${FILES[@]}" | grep -v '^[[:space:]]*$' > "$WORK/all.jsonl" || true
TOTAL=$(wc -l < "$WORK/all.jsonl")
[[ "$TOTAL" -gt 1 ]] || { echo "prepare_wikipedia.sh: found $TOTAL documents under $SRC" >&2; exit 1; }
VALID=$(( TOTAL > 2000 ? 1000 : TOTAL / 10 + 1 ))
head -n $(( TOTAL - VALID )) "$WORK/all.jsonl" > "$WORK/train.jsonl"
tail -n "$VALID" "$WORK/all.jsonl" > "$WORK/valid.jsonl"
PREPROCESS="$ROOT/.venv/bin/segatron-preprocess"
[[ -x "$PREPROCESS" ]] || PREPROCESS="segatron-preprocess"
"$PREPROCESS" --input-format jsonl --bpe sentencepiece --bpe-vocab-size "$VOCAB" --workers "$WORKERS" \
  --destdir "$DEST" --trainpref "$WORK/train.jsonl" --validpref "$WORK/valid.jsonl"
echo "Wikipedia binarized in $DEST ($(( TOTAL - VALID )) train and $VALID valid documents)"
