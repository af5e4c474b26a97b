"""``segatron-inspect DESTDIR SPLIT ITEM``: an item's tokens with their indexes.

``--verify`` first rehashes the split's files whole against their manifest
(opening a split checks sampled blocks only)."""
import argparse
import os
import sys
from typing import NoReturn

from .corpus_format import DICT_FILE
from .errors import PreprocessError


def format_item(dataset, dictionary, item: int) -> str:
    """Lines ``position  (paragraph, sentence, token)  symbol`` of item ``item``
    of a ``SplitReader``."""
    tokens, paragraph, sentence, token = dataset[item]
    lines = [f"item {item} of {len(dataset)}: {len(tokens)} tokens",
             f"{'position':>8}  {'(par, sent, tok)':<18}  token"]
    for position in range(len(tokens)):
        indexes = f"({paragraph[position]}, {sentence[position]}, {token[position]})"
        lines.append(f"{position:>8}  {indexes:<18}  {dictionary[tokens[position]]}")
    return "\n".join(lines)


def _fail(message: str) -> NoReturn:
    print(f"segatron-inspect: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _print_for_a_reader_that_may_stop(text: str) -> None:
    """Print ``text``. A reader that closes the pipe before the end (``| head``)
    ends the program quietly with exit status 0: the reader chose to stop, and a
    script under ``set -o pipefail`` goes on."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
        raise SystemExit(0) from None


def _check_destdir(destdir: str) -> None:
    """``destdir`` is a directory; ``PreprocessError`` names what it is otherwise."""
    try:
        os.stat(destdir)
    except FileNotFoundError:
        raise PreprocessError(f"{destdir}: no such directory") from None
    except OSError as err:  # a symbolic link loop, a file on the way
        raise PreprocessError(f"{destdir}: {err.strerror}") from None
    if not os.path.isdir(destdir):
        raise PreprocessError(f"{destdir}: a file, not a segatron-preprocess output directory")


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="segatron-inspect", description=__doc__.splitlines()[0])
    parser.add_argument("destdir", help="a segatron-preprocess output directory")
    parser.add_argument("split", help="split name, e.g. train, valid, test")
    parser.add_argument("item", type=int, help="item number (0-based; negative counts from the end)")
    parser.add_argument("--verify", action="store_true",
                        help="rehash the split's files whole and compare them with the sha256 its manifest records")
    args = parser.parse_args(argv)
    from .inputs import load_dictionary
    from .split_reader import SplitReader

    prefix = os.path.join(args.destdir, args.split)
    try:
        _check_destdir(args.destdir)
        dictionary = load_dictionary(os.path.join(args.destdir, DICT_FILE))
        dataset = SplitReader(prefix, len(dictionary), verify=args.verify)
    except (PreprocessError, ValueError) as err:
        _fail(str(err))
    except OSError as err:  # SplitReader's "split ... is incomplete", or a file that cannot be read
        _fail(f"{err.filename}: {err.strerror}" if err.filename else str(err))
    item = args.item + len(dataset) if args.item < 0 else args.item
    if not 0 <= item < len(dataset):
        _fail(f"item {args.item} out of range ({len(dataset)} items in {prefix})")
    if args.verify:
        print(f"{prefix}: its files and resources have the sha256 its manifest records", file=sys.stderr)
    _print_for_a_reader_that_may_stop(format_item(dataset, dictionary, item))


if __name__ == "__main__":
    cli_main()
