"""Does the cross-sequence Transformer carry information between sequences?

    python scripts/cross_thought_synthetic.py [--updates 1500] [--workdir cross_thought_synthetic]

Writes a corpus in which every sample is M short sequences of random filler
words that all contain the same value word, a fresh random value per sample:
a masked value can be recovered from another sequence of the sample, never
from its own. Trains ``cross_thought_tiny`` with ``fairseq-train --task
cross_thought_mlm`` (``--mask-prob`` of all tokens, 80/10/10) twice, with
and without the cross-sequence layer (same seed, data and steps), then masks
exactly the value of one sequence of each held-out sample and prints how often
each model predicts it (chance: 1 / number of values).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

import torch

from segatron_fairseq import PLUGIN_DIR

BIN = os.path.dirname(sys.executable)


def write_corpus(path, samples, num_sequences, length, values, seed):
    rng = random.Random(seed)
    fillers = [f"f{i}" for i in range(10)]
    with open(path, "w") as f:
        for _ in range(samples):
            value = f"v{rng.randrange(values)}"
            for _ in range(num_sequences):
                words = [rng.choice(fillers) for _ in range(length - 2)]
                words.insert(rng.randrange(len(words) + 1), value)
                f.write(" ".join(words) + "\n")  # + </s>: exactly `length` tokens
            f.write("\n")  # a blank line ends the document (no item)


def run(cmd, log):
    proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"failed, see {log}:\n{proc.stdout[-3000:]}")


def value_accuracy(checkpoint, data_dir, num_sequences, length):
    from fairseq import checkpoint_utils
    from fairseq.data import data_utils

    import segatron_fairseq  # noqa: F401  (registers the task and model)

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [checkpoint], arg_overrides={"data": data_dir})
    model, dictionary = models[0].eval(), task.dictionary
    tokens = data_utils.load_indexed_dataset(os.path.join(data_dir, "valid"), dictionary)
    stream = torch.cat([tokens[i] for i in range(len(tokens))])
    samples = stream[: len(stream) // (num_sequences * length) * num_sequences * length]
    samples = samples.view(-1, num_sequences, length)
    is_value = torch.tensor([dictionary[i].startswith("v") for i in range(len(dictionary))])
    correct = total = 0
    for j in range(num_sequences):  # mask the value in sequence j only; the others show it
        targets = is_value[samples]
        targets[:, [k for k in range(num_sequences) if k != j]] = False
        with torch.no_grad():
            logits, _ = model(samples.masked_fill(targets, task.mask_idx), masked_tokens=targets)
        correct += int((logits.argmax(-1) == samples[targets]).sum())
        total += int(targets.sum())
    return correct / total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workdir", default="cross_thought_synthetic")
    p.add_argument("--num-sequences", type=int, default=4)
    p.add_argument("--length", type=int, default=8)
    p.add_argument("--values", type=int, default=10)
    p.add_argument("--train-samples", type=int, default=20000)
    p.add_argument("--updates", type=int, default=1500)
    p.add_argument("--batch-size", type=int, default=64, help="samples per update")
    p.add_argument("--mask-prob", type=float, default=0.3)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    corpus = {split: os.path.join(args.workdir, f"{split}.txt") for split in ("train", "valid")}
    write_corpus(corpus["train"], args.train_samples, args.num_sequences, args.length, args.values, args.seed)
    write_corpus(corpus["valid"], 200, args.num_sequences, args.length, args.values, args.seed + 1)
    data = os.path.join(args.workdir, "bin")
    run([os.path.join(BIN, "segatron-preprocess"), "--input-format", "lines", "--trainpref", corpus["train"],
         "--validpref", corpus["valid"], "--destdir", data], os.path.join(args.workdir, "preprocess.log"))
    results = {}
    for name, flags in (("cross-sequence layer", []), ("no cross-sequence layer", ["--no-cross-layer"])):
        save = os.path.join(args.workdir, name.replace(" ", "_"))
        run([os.path.join(BIN, "fairseq-train"), data, "--user-dir", PLUGIN_DIR, "--task", "cross_thought_mlm",
             "--arch", "cross_thought_tiny", *flags, "--criterion", "masked_lm", "--num-sequences",
             args.num_sequences, "--sequence-length", args.length, "--mask-prob", args.mask_prob,
             "--batch-size", args.batch_size,
             "--optimizer", "adam", "--lr", args.lr, "--lr-scheduler", "fixed", "--warmup-updates", 50,
             "--dropout", 0.0, "--attention-dropout", 0.0, "--max-update", args.updates, "--seed", args.seed,
             "--save-dir", save, "--no-epoch-checkpoints", "--disable-validation", "--cpu"],
            os.path.join(args.workdir, f"{name.replace(' ', '_')}.log"))
        results[name] = value_accuracy(os.path.join(save, "checkpoint_last.pt"), data, args.num_sequences,
                                       args.length)
    print(f"{args.updates} updates, {args.num_sequences} sequences of {args.length} tokens per sample")
    print(f"masked value recovered (chance {1 / args.values:.3f}):")
    for name, accuracy in results.items():
        print(f"  {name:<24} {accuracy:.3f}")


if __name__ == "__main__":
    main()
