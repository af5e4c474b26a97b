"""Split one WikiText file into train/valid/test by whole articles.

    segatron-split-wikitext ../shared/data/wikitext2/wiki.valid.tokens OUT_DIR \
        [--valid-articles 5] [--test-articles 5]

Articles start at a top-level heading `` = Title = ``. The last articles go to
test, the ones before them to valid, the rest to train, written as
``wiki.{train,valid,test}.tokens`` in the same layout. Each split gets at
least one article. Everything is checked before anything is written, and
existing output files are refused unless --overwrite; an input that is one
of the outputs is refused always, and so is an output that is a directory,
device, FIFO or socket. The three files are written beside their places and
renamed in together: a failed, interrupted or terminated run leaves the old
files (or none), never a mixed set.
"""
import argparse
import os
from typing import Dict, List

from .atomic import atomic_paths, unreplaceable_kind
from .errors import PreprocessError
from .inputs import check_file, check_utf8, same_file
from .termination import exit_on_user_error
from .units import is_wikitext_title, normalize

SPLITS = ("train", "valid", "test")
OUTPUT_NAME = "wiki.{split}.tokens"


def split_articles(path):
    articles, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if is_wikitext_title(normalize(line)) and any(normalize(x) for x in current):
                # a blank line before a title belongs to the new article, as in the file
                trailing = current[-1:] if current and not normalize(current[-1]) else []
                articles.append(current[: len(current) - len(trailing)])
                current = trailing
            current.append(line)
    if current:
        articles.append(current)
    return articles


def write_together(parts: Dict[str, List[List[str]]]) -> None:
    """Each path of ``parts`` holding its articles, all or none (``atomic_paths``)."""
    paths = list(parts)
    with atomic_paths(paths) as staged:
        for path, tmp in zip(paths, staged):
            with open(tmp, "w", encoding="utf-8") as f:
                for article in parts[path]:
                    f.writelines(article)


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-split-wikitext", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("input", help="a WikiText file")
    p.add_argument("out_dir", help="where wiki.{train,valid,test}.tokens are written")
    p.add_argument("--valid-articles", type=int, default=5,
                   help="articles before the test ones go to valid (at least 1)")
    p.add_argument("--test-articles", type=int, default=5, help="the last articles go to test (at least 1)")
    p.add_argument("--overwrite", action="store_true", help="replace output files that exist (else refused)")
    args = p.parse_args(argv)
    for option in ("valid_articles", "test_articles"):
        if getattr(args, option) < 1:
            p.error(f"--{option.replace('_', '-')} must be >= 1, not {getattr(args, option)}")
    outputs = {split: os.path.join(args.out_dir, OUTPUT_NAME.format(split=split)) for split in SPLITS}
    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        p.error(f"{args.out_dir}: the output directory is a file")
    for path in outputs.values():
        if same_file(args.input, path):
            p.error(f"{args.input}: the input is one of the outputs; name another output directory")
        kind = unreplaceable_kind(path) or ("a directory" if os.path.isdir(path) else None)
        if kind:
            p.error(f"{path}: an output file is {kind}, which is never replaced")
        if os.path.lexists(path) and not args.overwrite:
            p.error(f"{path} exists; pass --overwrite to replace it, or name another output directory")
    writable = os.path.abspath(args.out_dir)
    while not os.path.isdir(writable):
        writable = os.path.dirname(writable)
    if not os.access(writable, os.W_OK | os.X_OK):
        p.error(f"{args.out_dir}: the output directory cannot be written ({writable} is not writable)")
    try:
        check_file(args.input, "the WikiText file")
        check_utf8(args.input)
    except PreprocessError as err:
        p.exit(1, f"{p.prog}: error: {err}\n")
    articles = split_articles(args.input)
    n_valid, n_test = args.valid_articles, args.test_articles
    if len(articles) <= n_valid + n_test:
        p.error(f"{args.input} has {len(articles)} articles; need more than {n_valid + n_test}")
    parts = {
        "train": articles[: len(articles) - n_valid - n_test],
        "valid": articles[len(articles) - n_valid - n_test: len(articles) - n_test],
        "test": articles[len(articles) - n_test:],
    }
    with exit_on_user_error(p.prog):
        os.makedirs(args.out_dir, exist_ok=True)
        write_together({outputs[split]: chosen for split, chosen in parts.items()})
    for split, chosen in parts.items():
        print(f"{split}: {len(chosen)} articles, {sum(len(''.join(a).split()) for a in chosen):,} tokens -> "
              f"{outputs[split]}")


if __name__ == "__main__":
    cli_main()
