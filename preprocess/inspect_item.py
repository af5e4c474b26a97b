"""``segatron-inspect DESTDIR SPLIT ITEM``: an item's tokens with their indexes."""
import argparse
import os
import sys

from .corpus_format import DICT_FILE


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


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="segatron-inspect", description=__doc__.splitlines()[0])
    parser.add_argument("destdir", help="a segatron-preprocess output directory")
    parser.add_argument("split", help="split name, e.g. train, valid, test")
    parser.add_argument("item", type=int, help="item number (0-based; negative counts from the end)")
    args = parser.parse_args(argv)
    from fairseq.data import Dictionary

    from .split_reader import SplitReader

    prefix = os.path.join(args.destdir, args.split)
    try:
        dictionary = Dictionary.load(os.path.join(args.destdir, DICT_FILE))
        dataset = SplitReader(prefix, len(dictionary))
    except (FileNotFoundError, ValueError) as err:
        print(f"segatron-inspect: error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    item = args.item + len(dataset) if args.item < 0 else args.item
    if not 0 <= item < len(dataset):
        print(f"segatron-inspect: error: item {args.item} out of range ({len(dataset)} items in {prefix})",
              file=sys.stderr)
        raise SystemExit(1)
    print(format_item(dataset, dictionary, item))


if __name__ == "__main__":
    cli_main()
