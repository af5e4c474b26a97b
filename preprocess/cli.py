"""``segatron-preprocess``: fairseq-preprocess plus paragraph/sentence/token indexes.

Arguments shared with ``fairseq-preprocess --only-source`` keep its names and
meaning; see README.md ("Segment-aware binarization") for the output layout.
The binarizing modules (and fairseq) are imported only once the arguments are
read, so ``--help`` and argument errors answer at once.
"""
import argparse
import logging
import sys

from .readers import INPUT_FORMATS


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="segatron-preprocess", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--trainpref", help="training text file")
    p.add_argument("--validpref", help="validation text file(s), comma separated (valid, valid1, ...)")
    p.add_argument("--testpref", help="test text file(s), comma separated (test, test1, ...)")
    p.add_argument("--destdir", default="data-bin", help="output directory")
    p.add_argument("--srcdict", help="reuse this fairseq dictionary instead of building one")
    p.add_argument("--nwordssrc", type=int, default=-1, help="number of words to keep (-1: all)")
    p.add_argument("--thresholdsrc", type=int, default=0, help="drop words seen this many times or fewer")
    p.add_argument("--workers", type=int, default=1, help="number of processes")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default="lines",
                   help="wikitext: WikiText-103 files; lines: one paragraph per line, a blank line ends a "
                        "document; jsonl: one document per line with a 'text' field")
    p.add_argument("--sentence-splitter", default="auto",
                   help="punkt-pretrained | punkt-trained | PATH (a punkt_tab directory, or a punkt.json "
                        "of segatron-preprocess 0.1.0); auto: NLTK's English model if installed, else "
                        "punkt-trained")
    p.add_argument("--punkt-train-chars", type=int, default=5_000_000,
                   help="train Punkt on at most this many characters of the training split")
    p.add_argument("--bpe", choices=("none", "sentencepiece"), default="none",
                   help="sub-words: none keeps the whitespace tokens (as fairseq-preprocess); sentencepiece "
                        "splits each sentence with a unigram sentencepiece model")
    p.add_argument("--bpe-model", help="an existing sentencepiece model (else trained on the training split)")
    p.add_argument("--bpe-vocab-size", type=int, default=32000,
                   help="pieces of the sentencepiece model trained when there is no --bpe-model")
    p.add_argument("--bpe-train-sentences", type=int, default=2_000_000,
                   help="train sentencepiece on at most this many sentences of the training split")
    p.add_argument("--chunk-bytes", type=int, default=4 << 20,
                   help="input is cut at document starts into pieces of about this size, one job each")
    return p


def cli_main(argv=None) -> None:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    parser = get_parser()
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    from .errors import PreprocessError
    from .pipeline import run

    try:
        run(args)
    except PreprocessError as err:
        print(f"segatron-preprocess: error: {err}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    cli_main()
