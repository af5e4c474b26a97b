"""``segatron-preprocess``: fairseq-preprocess plus paragraph/sentence/token indexes.

Arguments shared with ``fairseq-preprocess --only-source`` keep its names and
meaning; see docs/binarizer.md for the output layout.
The binarizing modules (and fairseq) are imported only once the arguments are
read, so ``--help`` and argument errors answer at once.
"""
import argparse
import logging
import signal
import sys


def get_parser() -> argparse.ArgumentParser:
    from .corpus_format import STREAM_STYLES
    from .readers import INPUT_FORMATS

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
    p.add_argument("--sentence-splitter", default="punkt-trained",
                   help="punkt-trained: Punkt trained on the training split (seeded with English abbreviations) "
                        "and saved in DESTDIR/punkt_tab, or the one saved there; punkt-pretrained: NLTK's "
                        "English model (must be installed); PATH: a punkt_tab directory, or a punkt.json of "
                        "segatron-preprocess 0.1.0. Recorded in segatron_preprocess.json; a destination refuses "
                        "a second splitter")
    p.add_argument("--stream-style", choices=STREAM_STYLES, default="fairseq",
                   help="fairseq: the items of fairseq-preprocess (blank lines are eos-only items, headings one "
                        "sentence, the paragraph index restarts at each document); authors: the Segatron "
                        "authors' WikiText-103 stream (blank lines dropped, headings split like text, the "
                        "paragraph index runs over the split)")
    p.add_argument("--punkt-train-chars", type=int, default=5_000_000,
                   help="train Punkt on at most this many characters of the training split")
    p.add_argument("--bpe", choices=("none", "sentencepiece", "wordpiece"), default="none",
                   help="sub-words: none keeps the whitespace tokens (as fairseq-preprocess); sentencepiece "
                        "splits each sentence with a unigram sentencepiece model; wordpiece tokenizes as BERT "
                        "does with --bpe-vocab")
    p.add_argument("--bpe-vocab", help="--bpe wordpiece: BERT's vocab.txt (e.g. a segatron-import'ed model's); "
                                       "copied into DESTDIR")
    p.add_argument("--bpe-cased", action="store_true",
                   help="--bpe wordpiece: keep case and accents (a cased BERT); by default text is lower-cased "
                        "and accents are stripped, as for uncased BERT and SegaBERT")
    p.add_argument("--bpe-model", help="an existing sentencepiece model (else trained on the training split)")
    p.add_argument("--bpe-vocab-size", type=int, default=None,
                   help="pieces of the sentencepiece model trained when there is no --bpe-model (default 32000); "
                        "must match the model a destination already holds")
    p.add_argument("--bpe-train-sentences", type=int, default=2_000_000,
                   help="train sentencepiece on at most this many sentences of the training split")
    p.add_argument("--chunk-bytes", type=int, default=4 << 20,
                   help="input is cut at document starts into pieces of about this size, one job each")
    return p


def cli_main(argv=None) -> None:
    try:
        _main(argv)
    except KeyboardInterrupt:  # SIGINT before the run's own handler (imports, checks) or after it
        print("segatron-preprocess: stopped by SIGINT", file=sys.stderr)
        raise SystemExit(128 + signal.SIGINT) from None


def _main(argv) -> None:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    parser = get_parser()
    args = parser.parse_args(argv)
    for option in ("workers", "chunk_bytes", "punkt_train_chars", "bpe_train_sentences", "bpe_vocab_size"):
        value = getattr(args, option)
        if value is not None and value < 1:
            parser.error(f"--{option.replace('_', '-')} must be >= 1, not {value}")
    from .errors import PreprocessError
    from .pipeline import run
    from .staging import Interrupted

    try:
        run(args)
    except PreprocessError as err:
        print(f"segatron-preprocess: error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    except Interrupted as stop:
        print(f"segatron-preprocess: stopped by {stop}: workers ended, temporary files removed, {args.destdir} "
              f"left as it was", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None

if __name__ == "__main__":
    cli_main()
