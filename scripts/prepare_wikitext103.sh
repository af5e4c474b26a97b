#!/usr/bin/env bash
# Binarize a downloaded WikiText-103 (word level, "wikitext-103" folder with
# wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens) for --task segatron_lm.
#
#   bash scripts/prepare_wikitext103.sh /path/to/wikitext-103 [DESTDIR] [WORKERS] [OPTIONS...]
#
# DESTDIR defaults to data-bin/wikitext-103, WORKERS to the number of cores;
# OPTIONS go to segatron-preprocess (e.g. --stream-style authors for the
# authors' stream, with DESTDIR and WORKERS given). By default the token
# datasets and dict.txt equal fairseq-preprocess --only-source's, so
# perplexities are comparable with fairseq's and Transformer-XL's numbers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="${1:?usage: prepare_wikitext103.sh /path/to/wikitext-103 [DESTDIR] [WORKERS]}"
DEST="${2:-data-bin/wikitext-103}"
WORKERS="${3:-$(nproc)}"
shift $(( $# < 3 ? $# : 3 ))
for split in train valid test; do
  [[ -s "$SRC/wiki.$split.tokens" ]] || { echo "prepare_wikitext103.sh: $SRC/wiki.$split.tokens is missing or empty" >&2; exit 1; }
done
PREPROCESS="$ROOT/.venv/bin/segatron-preprocess"
[[ -x "$PREPROCESS" ]] || PREPROCESS="segatron-preprocess"
"$PREPROCESS" --input-format wikitext --workers "$WORKERS" --destdir "$DEST" \
  --trainpref "$SRC/wiki.train.tokens" --validpref "$SRC/wiki.valid.tokens" --testpref "$SRC/wiki.test.tokens" "$@"
echo "WikiText-103 binarized in $DEST; train with:"
echo "  fairseq-hydra-train --config-dir $ROOT/segatron_fairseq/config --config-name segatron_xl_wt103_base \\"
echo "      task.data=$(cd "$DEST" && pwd) common.user_dir=$ROOT/segatron_fairseq checkpoint.save_dir=\$PWD/checkpoints"
