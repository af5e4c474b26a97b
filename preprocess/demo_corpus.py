"""A generated corpus in WikiText-103 layout, for the demo and the tests.

    python -m segatron_preprocess.demo_corpus OUT_DIR [--train-documents 400] [--seed 1]

Writes ``wiki.train.tokens``, ``wiki.valid.tokens`` and ``wiki.test.tokens``.
Documents have real structure: a ``= Title =`` line, ``= = Section = =``
headings, paragraphs of several sentences. Each paragraph is about one subject
that most of its sentences name again, and each document about one place, so
knowing which earlier words are in the same paragraph or sentence helps to
predict the next one, as in real text.
"""
import argparse
import os
import random
from typing import List

from .atomic import atomic_path

NOUNS = ("lobster crab shrimp octopus squid whale seal gull heron otter eel salmon trout cod herring "
         "mackerel oyster mussel clam urchin starfish sponge coral kelp plankton turtle dolphin porpoise "
         "walrus pelican").split()
ADJECTIVES = "large small blue red young old rare common pale dark striped spotted quiet fast slow".split()
VERBS = ("lives feeds hunts rests breeds swims hides grows moves migrates gathers waits sleeps "
         "travels settles").split()
PLACES = ("reef harbour estuary lagoon fjord bay cove shelf trench delta marsh inlet shoal strait "
          "channel").split()
REGIONS = ("Norway Brittany Cornwall Galicia Iceland Shetland Orkney Biscay Jutland Wales Kerry Normandy "
           "Friesland Skagerrak Hebrides").split()
SECTIONS = ["Description", "Distribution", "Ecology", "Behaviour", "Fishery", "Conservation"]
TIMES = "at night,in winter,in summer,after a storm,during the spring,at low tide".split(",")


def _sentence(rng: random.Random, subject: str, region: str) -> List[str]:
    name = subject if rng.random() < 0.75 else rng.choice(NOUNS)
    words = ["The", rng.choice(ADJECTIVES), name, rng.choice(VERBS)]
    words += ["near", "the", rng.choice(PLACES), "of", region if rng.random() < 0.7 else rng.choice(REGIONS)]
    if rng.random() < 0.4:
        words += rng.choice(TIMES).split()
    if rng.random() < 0.25:
        words += [",", "as", "the", "U.S.", "survey", "of", "the", name, "reported"]
    return words + ["."]


def make_document(rng: random.Random, number: int) -> List[str]:
    """WikiText lines (without the leading space) of one document."""
    region = rng.choice(REGIONS)
    lines = [f"= The {rng.choice(NOUNS)} of {region} {number} ="]
    for section in rng.sample(SECTIONS, rng.randint(2, 4)):
        lines.append(f"= = {section} = =")
        for _ in range(rng.randint(1, 3)):
            subject = rng.choice(NOUNS)
            sentences = [_sentence(rng, subject, region) for _ in range(rng.randint(2, 6))]
            lines.append(" ".join(w for s in sentences for w in s))
    return lines


def write_wikitext_file(path: str, documents: List[List[str]]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for lines in documents:
            f.write(" \n")
            for line in lines:
                f.write(f" {line} \n \n")


def write_demo_corpus(out_dir: str, train_documents: int = 400, seed: int = 1) -> None:
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    held_out = max(1, train_documents // 10)
    counts = {"train": train_documents, "valid": held_out, "test": held_out}
    number = 0
    for split, count in counts.items():
        documents = []
        for _ in range(count):
            documents.append(make_document(rng, number))
            number += 1
        write_wikitext_file(os.path.join(out_dir, f"wiki.{split}.tokens"), documents)


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--train-documents", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    write_demo_corpus(args.out_dir, args.train_documents, args.seed)


if __name__ == "__main__":
    cli_main()
