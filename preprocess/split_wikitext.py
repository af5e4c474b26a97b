"""Split one WikiText file into train/valid/test by whole articles.

    segatron-split-wikitext ../shared/data/wikitext2/wiki.valid.tokens OUT_DIR \
        [--valid-articles 5] [--test-articles 5]

Articles start at a top-level heading `` = Title = ``. The last articles go to
test, the ones before them to valid, the rest to train, written as
``wiki.{train,valid,test}.tokens`` in the same layout.
"""
import argparse
import os

from .atomic import atomic_path
from .readers import is_wikitext_title, normalize


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


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="segatron-split-wikitext", description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("input", help="a WikiText file")
    p.add_argument("out_dir", help="where wiki.{train,valid,test}.tokens are written")
    p.add_argument("--valid-articles", type=int, default=5, help="articles before the test ones go to valid")
    p.add_argument("--test-articles", type=int, default=5, help="the last articles go to test")
    args = p.parse_args(argv)
    articles = split_articles(args.input)
    n_valid, n_test = args.valid_articles, args.test_articles
    if len(articles) <= n_valid + n_test:
        p.error(f"{args.input} has {len(articles)} articles; need more than {n_valid + n_test}")
    parts = {
        "train": articles[: len(articles) - n_valid - n_test],
        "valid": articles[len(articles) - n_valid - n_test: len(articles) - n_test],
        "test": articles[len(articles) - n_test:],
    }
    os.makedirs(args.out_dir, exist_ok=True)
    for split, chosen in parts.items():
        path = os.path.join(args.out_dir, f"wiki.{split}.tokens")
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for article in chosen:
                f.writelines(article)
        print(f"{split}: {len(chosen)} articles, {sum(len(''.join(a).split()) for a in chosen):,} tokens -> {path}")


if __name__ == "__main__":
    cli_main()
