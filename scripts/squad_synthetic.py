"""Can a pre-trained SegaBERT learn to extract answer spans? End to end on CPU.

    python scripts/squad_synthetic.py [--wikitext ../shared/data/wikitext2/wiki.valid.tokens]
        [--pretrain-updates 300] [--epochs 40] [--workdir squad_synthetic]

1. splits the WikiText file by article (``segatron-split-wikitext``), binarizes
   it (``segatron-preprocess``) and pre-trains ``segabert_tiny`` on the train
   articles (``fairseq-train --task segabert_mlm``);
2. writes SQuAD v2.0 files whose contexts are WikiText paragraphs (train: train
   articles, dev: held-out articles) with up to two facts inserted at sentence
   boundaries, "The code word is W ." and "The secret city is W ." (W a word of
   the paragraph); each context asks for both, and a fact left out makes its
   question unanswerable;
3. fine-tunes with ``--task extractive_qa --squad-v2`` (windows of
   ``--max-positions`` tokens every ``--doc-stride``), then writes the dev
   predictions with ``segatron-predict squad`` and prints their official exact
   match and F1 next to two baselines: a random span of 1-3 words of the
   context, and "no answer" for every question.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.evaluation.squad_metrics import normalize_answer, question_scores

BIN = os.path.dirname(sys.executable)
FACTS = (("code word", "The code word is {} .", "What is the code word ?"),
         ("secret city", "The secret city is {} .", "Which is the secret city ?"))


def _run(*args) -> str:
    proc = subprocess.run([os.path.join(BIN, args[0]), *map(str, args[1:])], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if proc.returncode:
        sys.exit(f"{args[0]} failed:\n{proc.stdout[-4000:]}")
    return proc.stdout


def paragraphs(path: str, max_words: int):
    """Body paragraphs of a WikiText file (no headings), cut after the last sentence within ``max_words``."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) < 20 or words[0] == "=":
                continue
            cut = [k + 1 for k, w in enumerate(words[:max_words]) if w == "."]
            if cut:
                yield words[:cut[-1]]


def squad_file(path: str, source: str, contexts: int, max_words: int, seed: int) -> None:
    rng = random.Random(seed)
    articles = []
    for number, words in enumerate(paragraphs(source, max_words)):
        if number == contexts:
            break
        # answer words that the official normalisation keeps (not "The")
        candidates = [w for w in words if re.fullmatch(r"[A-Za-z]{3,}", w) and normalize_answer(w)]
        sentences, current = [], []
        for w in words:
            current.append(w)
            if w == ".":
                sentences.append(current)
                current = []
        present = [True, True] if rng.random() < 0.5 else rng.sample([True, False], 2)  # a quarter unanswerable
        qas = []
        for k, (_name, fact, _question) in enumerate(FACTS):
            answer = rng.choice(candidates)
            if present[k]:
                sentences.insert(rng.randrange(len(sentences) + 1), fact.format(answer).split())
        context = " ".join(" ".join(s) for s in sentences)
        for k, (_name, fact, question) in enumerate(FACTS):
            qid = f"{seed}-{number}-{k}"
            match = re.search(re.escape(fact.split("{}")[0]) + r"(\S+) \.", context)
            if match:
                qas.append({"id": qid, "question": question, "is_impossible": False,
                            "answers": [{"text": match.group(1), "answer_start": match.start(1)}]})
            else:
                qas.append({"id": qid, "question": question, "is_impossible": True, "answers": []})
        articles.append({"title": f"paragraph {number}", "paragraphs": [{"context": context, "qas": qas}]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "v2.0", "data": articles}, f)


def baselines(path: str, seed: int):
    """(random span EM, no-answer EM) on a SQuAD file."""
    rng = random.Random(seed)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    random_em, silent_em, total = 0.0, 0.0, 0
    for article in data:
        for paragraph in article["paragraphs"]:
            words = paragraph["context"].split()
            for qa in paragraph["qas"]:
                golds = [a["text"] for a in qa["answers"]]
                start = rng.randrange(len(words))
                span = " ".join(words[start:start + rng.randint(1, 3)])
                random_em += question_scores(span, golds, squad_v2=True)[0]
                silent_em += question_scores("", golds, squad_v2=True)[0]
                total += 1
    return 100 * random_em / total, 100 * silent_em / total


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--wikitext", default=os.path.join(here, "..", "..", "shared", "data", "wikitext2",
                                                           "wiki.valid.tokens"))
    parser.add_argument("--workdir", default="squad_synthetic")
    parser.add_argument("--pretrain-updates", type=int, default=300)
    parser.add_argument("--train-contexts", type=int, default=400)
    parser.add_argument("--dev-contexts", type=int, default=60)
    parser.add_argument("--max-words", type=int, default=60, help="paragraphs are cut to about this many words")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--max-positions", type=int, default=64)
    parser.add_argument("--doc-stride", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    text, corpus, squad = (os.path.join(work, name) for name in ("text", "bin", "squad"))
    _run("segatron-split-wikitext", args.wikitext, text, "--valid-articles", 5, "--test-articles", 5)
    _run("segatron-preprocess", "--input-format", "wikitext", "--trainpref", os.path.join(text, "wiki.train.tokens"),
         "--validpref", os.path.join(text, "wiki.valid.tokens"), "--destdir", corpus)
    _run("fairseq-train", corpus, "--user-dir", PLUGIN_DIR, "--task", "segabert_mlm", "--criterion", "masked_lm",
         "--arch", "segabert_tiny", "--tokens-per-sample", 128, "--batch-size", 16, "--optimizer", "adam",
         "--lr", 1e-3, "--lr-scheduler", "polynomial_decay", "--warmup-updates", 30,
         "--total-num-update", args.pretrain_updates, "--max-update", args.pretrain_updates,
         "--save-dir", os.path.join(work, "pretrained"), "--no-epoch-checkpoints", "--cpu",
         "--disable-validation", "--seed", args.seed)
    os.makedirs(squad)
    squad_file(os.path.join(squad, "train-v2.0.json"), os.path.join(text, "wiki.train.tokens"), args.train_contexts,
               args.max_words, seed=args.seed)
    dev = os.path.join(squad, "dev-v2.0.json")
    squad_file(dev, os.path.join(text, "wiki.test.tokens"), args.dev_contexts, args.max_words, seed=args.seed + 1)
    out = _run("fairseq-train", squad, "--user-dir", PLUGIN_DIR, "--task", "extractive_qa", "--squad-v2",
               "--pretrain-data", corpus, "--criterion", "extractive_qa", "--arch", "segabert_tiny",
               "--max-positions", args.max_positions, "--doc-stride", args.doc_stride,
               "--restore-file", os.path.join(work, "pretrained", "checkpoint_last.pt"), "--reset-optimizer",
               "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler", "--batch-size", 16,
               "--optimizer", "adam", "--lr", 1e-3, "--max-epoch", args.epochs, "--save-dir",
               os.path.join(work, "finetuned"), "--no-epoch-checkpoints", "--log-format", "simple", "--cpu",
               "--seed", args.seed, "--best-checkpoint-metric", "best_f1", "--maximize-best-checkpoint-metric")
    print([line for line in out.splitlines() if "valid on 'valid'" in line][-1])
    predictions = os.path.join(work, "predictions.json")
    print(_run("segatron-predict", "squad", "--checkpoint", os.path.join(work, "finetuned", "checkpoint_best.pt"),
               "--pretrain-data", corpus, "--input", dev, "--out", predictions, "--cpu").strip())
    with open(predictions, encoding="utf-8") as f:
        answers = json.load(f)
    with open(dev, encoding="utf-8") as f:
        golds = {qa["id"]: [a["text"] for a in qa["answers"]]
                 for article in json.load(f)["data"] for p in article["paragraphs"] for qa in p["qas"]}
    em = 100 * sum(question_scores(answers[qid], g, squad_v2=True)[0] for qid, g in golds.items()) / len(golds)
    random_em, silent_em = baselines(dev, args.seed)
    print(f"dev questions {len(golds)} | fine-tuned EM {em:.2f} | random-span EM {random_em:.2f} | "
          f"no-answer EM {silent_em:.2f}")


if __name__ == "__main__":
    main()
