"""Small WikiText-format corpora with known document/paragraph/sentence structure."""
import json
import random
from typing import List

SUBJECTS = ["The lobster", "Homarus gammarus", "The species", "A female", "The fishery", "Its shell",
            "The larva", "This population", "The government", "Each adult"]
VERBS = ["lives", "grows", "moves", "feeds", "breeds", "appears", "remains", "hides", "rests", "travels"]
PLACES = ["in the eastern Atlantic", "near the coast of Norway", "on rocky ground", "in deep water",
          "around the British Isles", "in the Mediterranean Sea", "under a ledge", "at night"]
EXTRAS = ["like its relative H. americanus", "as the U.S. government reported", "for up to 20 years",
          "with a blue colour", "during the summer", "after a long moult", "at a depth of 150 m"]


def sentence(rng: random.Random) -> List[str]:
    words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(PLACES)}".split()
    if rng.random() < 0.5:
        words += ["," ] + rng.choice(EXTRAS).split()
    return words + ["."]


def make_documents(n_documents: int, seed: int, long_paragraph: bool = False):
    """Documents as lists of paragraphs; a paragraph is ("title"|"heading"|"text", sentences)."""
    rng = random.Random(seed)
    documents = []
    for d in range(n_documents):
        doc = [("title", [f"= Lobster {d} =".split()])]
        for s in range(rng.randint(1, 3)):
            if s:
                doc.append(("heading", [f"= = Section {s} = =".split()]))
            for _ in range(rng.randint(1, 4)):
                doc.append(("text", [sentence(rng) for _ in range(rng.randint(1, 6))]))
        documents.append(doc)
    if long_paragraph:
        documents[-1].append(("text", [sentence(rng) for _ in range(400)]))
    return documents


def write_wikitext(path, documents, empty_paragraph_in: int = -1) -> None:
    """WikiText layout: ' = Title = ', blank lines between paragraphs and headings.
    ``empty_paragraph_in``: that document gets two consecutive blank lines."""
    with open(path, "w", encoding="utf-8") as f:
        for d, doc in enumerate(documents):
            f.write(" \n")
            for k, (_, sentences) in enumerate(doc):
                f.write(" " + " ".join(w for s in sentences for w in s) + " \n")
                f.write(" \n")
                if d == empty_paragraph_in and k == 1:
                    f.write(" \n")


def write_lines(path, documents) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for d, doc in enumerate(documents):
            if d:
                f.write("\n")
            for _, sentences in doc:
                f.write(" ".join(w for s in sentences for w in s) + "\n")


def write_jsonl(path, documents) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for doc in documents:
            text = "\n".join(" ".join(w for s in sentences for w in s) for _, sentences in doc)
            f.write(json.dumps({"id": len(text), "text": text}) + "\n")
