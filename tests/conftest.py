"""Shared helpers: run the venv's console scripts and fail with their output."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from segatron_fairseq import PLUGIN_DIR  # noqa: F401  (the --user-dir of every test)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_cli(name, *args, cwd=None, expect_ok=True):
    """Run console script ``name`` from the venv; return its combined output."""
    cmd = [str(BIN / name), *map(str, args)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-6000:]}")
    if not expect_ok and proc.returncode == 0:
        pytest.fail(f"{' '.join(cmd)} succeeded but should have failed:\n{proc.stdout[-3000:]}")
    return proc.stdout


def binarized_wikitext(directory, train_documents: int, valid_documents: int, seed: int):
    """``directory``/train.txt and valid.txt (generated WikiText), binarized into ``directory``/bin."""
    from corpus import make_documents, write_wikitext

    write_wikitext(directory / "train.txt", make_documents(train_documents, seed=seed))
    write_wikitext(directory / "valid.txt", make_documents(valid_documents, seed=seed + 1))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", directory / "train.txt",
            "--validpref", directory / "valid.txt", "--destdir", directory / "bin")
    return directory


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (for torchrun)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cli():
    return run_cli


def pretrained_segabert(directory, words, documents: int = 30, updates: int = 10, arch: str = "segabert_tiny"):
    """``directory``/bin (a lines corpus of ``words``, sentences ending in " .")
    and ``directory``/ckpt/checkpoint_last.pt, an ``arch`` model trained ``updates`` steps on it."""
    import random

    rng = random.Random(0)
    with open(directory / "corpus.txt", "w") as f:
        for d in range(documents):
            if d:
                f.write("\n")
            for _ in range(4):
                f.write(" ".join(rng.choice(words) for _ in range(12)) + " .\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", directory / "corpus.txt",
            "--validpref", directory / "corpus.txt", "--destdir", directory / "bin")
    run_cli("fairseq-train", directory / "bin", "--user-dir", PLUGIN_DIR, "--task", "segabert_mlm", "--criterion",
            "masked_lm", "--arch", arch, "--tokens-per-sample", 32, "--batch-size", 8, "--optimizer",
            "adam", "--lr", 1e-3, "--max-update", updates, "--save-dir", directory / "ckpt", "--no-epoch-checkpoints",
            "--cpu", "--disable-validation")
    return directory
