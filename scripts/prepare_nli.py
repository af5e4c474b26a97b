"""The siamese NLI training data of S-SegaBERT (and Sentence-BERT): SNLI and
MNLI together, as ``sentence1 \\t sentence2 \\t label`` TSVs.

    python scripts/prepare_nli.py SNLI_DIR MNLI_DIR OUT_DIR

SNLI_DIR is the official ``snli_1.0`` directory (``snli_1.0_train.txt``,
``snli_1.0_dev.txt``: gold_label in column 0, sentence1 / sentence2 in
columns 5 / 6); MNLI_DIR is GLUE's ``MNLI`` (``train.tsv``,
``dev_matched.tsv``). Writes OUT_DIR/train.tsv (SNLI train + MNLI train) and
OUT_DIR/dev.tsv (SNLI dev + MNLI dev matched); pairs without a gold label
(``-``) are left out.
"""
import argparse
import os
import sys

from segatron_fairseq.data.glue_tsv import GLUE_TASKS, GlueFormat, read_tsv
from segatron_preprocess.atomic import atomic_path

LABELS = ("contradiction", "entailment", "neutral")
SNLI = GlueFormat((5, 6), 0, True, LABELS, ())
SOURCES = {"train": (("snli", "snli_1.0_train.txt"), ("mnli", "train.tsv")),
           "dev": (("snli", "snli_1.0_dev.txt"), ("mnli", "dev_matched.tsv"))}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snli_dir")
    parser.add_argument("mnli_dir")
    parser.add_argument("out_dir")
    args = parser.parse_args(argv)
    formats = {"snli": (args.snli_dir, SNLI), "mnli": (args.mnli_dir, GLUE_TASKS["MNLI"])}
    try:
        splits = {}
        for split, sources in SOURCES.items():
            rows = []
            for name, file in sources:
                directory, fmt = formats[name]
                read = read_tsv(os.path.join(directory, file), fmt)
                kept = [(texts, label) for texts, label in read if label in LABELS]
                print(f"{os.path.join(directory, file)}: {len(kept):,} pairs ({len(read) - len(kept):,} without a "
                      f"gold label left out)")
                rows += kept
            splits[split] = rows
    except (OSError, ValueError) as err:
        sys.exit(f"prepare_nli: error: {err}")
    os.makedirs(args.out_dir, exist_ok=True)
    for split, rows in splits.items():
        with atomic_path(os.path.join(args.out_dir, f"{split}.tsv")) as staged, open(staged, "w") as f:
            for (first, second), label in rows:
                f.write(f"{first}\t{second}\t{label}\n")
        print(f"{split}.tsv: {len(rows):,} pairs")


if __name__ == "__main__":
    main()
