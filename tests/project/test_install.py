"""The patched fairseq 0.12.2 install: imports, CLI round trip, checkpoints, hydra."""
import argparse
import math
import random
import re

import pytest
import torch
from conftest import BIN, PLUGIN_DIR, ROOT


def write_corpus(path, lines, seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    with open(path, "w") as f:
        for _ in range(lines):
            # a learnable pattern: each word mostly followed by its successor
            w = rng.randrange(40)
            out = []
            for _ in range(rng.randint(5, 25)):
                out.append(words[w])
                w = (w + 1) % 40 if rng.random() < 0.8 else rng.randrange(40)
            f.write(" ".join(out) + "\n")


def test_fairseq_imports_with_compiled_modules():
    import fairseq
    from fairseq.data import data_utils_fast, token_block_utils_fast  # noqa: F401  (Cython)
    from fairseq.dataclass.configs import FairseqConfig

    assert fairseq.__version__ == "0.12.2"
    cfg = FairseqConfig()
    # default_factory fields are fresh instances, not a shared mutable default
    assert cfg.common is not FairseqConfig().common


def test_plugin_imports_via_user_dir():
    from fairseq import utils

    utils.import_user_module(argparse.Namespace(user_dir=str(PLUGIN_DIR)))
    import segatron_fairseq

    assert segatron_fairseq.__file__ == str(ROOT / "segatron_fairseq" / "__init__.py")  # this repository's
    assert PLUGIN_DIR == str(ROOT / "segatron_fairseq")


def test_every_console_script_is_installed_and_its_entry_point_loads():
    """The tests call the console scripts' entry points in-process (conftest.run_cli): each one setup.py declares is
    an executable of the venv whose function imports."""
    import ast
    import importlib.metadata

    setup = ast.parse((ROOT / "setup.py").read_text())
    declared = {node.value.split("=")[0].strip() for node in ast.walk(setup)
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and " = " in node.value
                and ":" in node.value}
    assert len(declared) == 13, declared
    installed = {e.name: e for e in importlib.metadata.entry_points(group="console_scripts")}
    for name in sorted(declared):
        assert (BIN / name).is_file(), name
        assert callable(installed[name].load()), name


@pytest.mark.end_to_end
def test_console_scripts_run_as_subprocesses(tmp_path, cli):
    """The installed executables themselves: the binarizer writes a corpus, the plugin lists its components."""
    (tmp_path / "corpus.txt").write_text("The crab lives near the reef . It hides .\n")
    out = cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
              "--destdir", tmp_path / "bin", separate_process=True)
    assert "1 documents" in out and (tmp_path / "bin" / "train.token.idx").exists()
    assert "segatron_lm" in cli("segatron-components", separate_process=True)


def _train_args(data, save_dir, max_update):
    return [
        data, "--user-dir", PLUGIN_DIR, "--task", "language_modeling", "--arch", "transformer_lm",
        "--decoder-layers", 1, "--decoder-embed-dim", 16, "--decoder-ffn-embed-dim", 32,
        "--decoder-attention-heads", 2, "--tokens-per-sample", 32, "--max-tokens", 256,
        "--optimizer", "adam", "--lr", 1e-3, "--max-update", max_update, "--save-dir", save_dir,
        "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", 1, "--cpu", "--seed", 1,
    ]


def _num_updates(checkpoint):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return state["optimizer_history"][-1]["num_updates"]


@pytest.mark.end_to_end
def test_preprocess_train_eval_resume(tmp_path, cli):
    write_corpus(tmp_path / "train.txt", 300, seed=0)
    write_corpus(tmp_path / "valid.txt", 40, seed=1)
    data = tmp_path / "bin"
    cli("fairseq-preprocess", "--only-source", "--trainpref", tmp_path / "train.txt",
        "--validpref", tmp_path / "valid.txt", "--destdir", data, "--workers", 1)
    save = tmp_path / "ckpt"
    cli("fairseq-train", *_train_args(data, save, 4))
    assert _num_updates(save / "checkpoint_last.pt") == 4

    out = cli("fairseq-eval-lm", data, "--user-dir", PLUGIN_DIR, "--path", save / "checkpoint_best.pt",
              "--gen-subset", "valid", "--tokens-per-sample", 32, "--max-tokens", 256, "--cpu")
    ppl = float(re.search(r"Perplexity: ([0-9.]+)", out).group(1))
    assert math.isfinite(ppl) and 1.0 < ppl < 100.0  # vocabulary ~44: a real, bounded perplexity

    # resume: picks up checkpoint_last.pt at update 4 and continues to 7
    out = cli("fairseq-train", *_train_args(data, save, 7))
    assert re.search(r"Loaded checkpoint \S+checkpoint_last\.pt \(epoch 1 @ 4 updates\)", out), out[-3000:]
    assert "num_updates=5" in out and "num_updates=4," not in out.split("Loaded checkpoint")[1]
    assert _num_updates(save / "checkpoint_last.pt") == 7

    # --restore-file into a fresh directory, weights only
    out = cli("fairseq-train", *_train_args(data, tmp_path / "fresh", 2), "--restore-file",
              save / "checkpoint_best.pt", "--reset-optimizer", "--reset-dataloader", "--reset-meters",
              "--reset-lr-scheduler")
    assert "Loaded checkpoint" in out and _num_updates(tmp_path / "fresh" / "checkpoint_last.pt") == 2


def test_each_run_in_the_test_process_starts_as_a_new_process(tmp_path, cli):
    """fairseq keeps the best validation loss of a run at module level; a run in the test process after a better one
    still writes its own checkpoint_best.pt (``conftest._forget_earlier_runs``)."""
    write_corpus(tmp_path / "train.txt", 300, seed=0)
    write_corpus(tmp_path / "valid.txt", 40, seed=1)
    data = tmp_path / "bin"
    cli("fairseq-preprocess", "--only-source", "--trainpref", tmp_path / "train.txt",
        "--validpref", tmp_path / "valid.txt", "--destdir", data, "--workers", 1)
    runs = [cli("fairseq-train", *_train_args(data, tmp_path / name, updates)) for name, updates in (("long", 30),
                                                                                                   ("short", 1))]
    long_loss, short_loss = (float(re.findall(r"valid on 'valid' subset \| loss ([0-9.]+)", out)[-1]) for out in runs)
    assert short_loss > long_loss  # the earlier run was the better one
    assert (tmp_path / "short" / "checkpoint_best.pt").is_file()


@pytest.mark.end_to_end
def test_hydra_train_with_project_config(tmp_path, cli):
    write_corpus(tmp_path / "train.txt", 200, seed=2)
    data = tmp_path / "bin"
    cli("fairseq-preprocess", "--only-source", "--trainpref", tmp_path / "train.txt",
        "--validpref", tmp_path / "train.txt", "--destdir", data, "--workers", 1)
    out = cli("fairseq-hydra-train", "--config-dir", ROOT / "segatron_fairseq" / "config",
              "--config-name", "transformer_lm_tiny", f"task.data={data}",
              f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"common.user_dir={PLUGIN_DIR}",
              f"hydra.run.dir={tmp_path / 'hydra'}")
    assert "done training" in out
    assert _num_updates(tmp_path / "ckpt" / "checkpoint_last.pt") == 5


@pytest.mark.end_to_end
def test_fairseq_train_exits_cleanly_with_data_loading_in_the_main_process(tmp_path, cli):
    """fairseq's prefetching thread is stopped at exit (our patch): unpatched, most runs with
    --num-workers 0 abort after "done training" ("terminate called without an active exception")."""
    from corpus import make_documents, write_lines

    write_lines(tmp_path / "corpus.txt", make_documents(60, seed=2))
    cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
        "--validpref", tmp_path / "corpus.txt", "--destdir", tmp_path / "bin")
    for run in range(3):  # fairseq's own task and model: the fix is in fairseq
        out = cli("fairseq-train", tmp_path / "bin", "--task", "masked_lm", "--criterion", "masked_lm",
                  "--arch", "roberta_base", "--encoder-embed-dim", 32, "--encoder-ffn-embed-dim", 64,
                  "--encoder-layers", 1, "--encoder-attention-heads", 2, "--tokens-per-sample", 64,
                  "--batch-size", 4, "--optimizer", "adam", "--lr", 1e-3, "--max-update", 1, "--num-workers", 0,
                  "--save-dir", tmp_path / f"ckpt{run}", "--no-epoch-checkpoints", "--cpu", "--disable-validation",
                  separate_process=True)  # the exit of a process of its own is what is checked
        assert "done training" in out and "terminate called" not in out


def test_torch_is_pinned_at_the_version_pip_installed_not_at_its___version__(tmp_path):
    """The package index's CUDA wheels of torch report ``2.13.0+cu130`` as ``torch.__version__`` while pip installed
    ``torch 2.13.0``: ``torch==2.13.0+cu130`` (the pin read from ``__version__``) is a requirement no index meets."""
    import subprocess
    import sys

    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text('__version__ = "2.13.0+cu130"\n')
    (site / "torch-2.13.0.dist-info").mkdir()
    (site / "torch-2.13.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}

    def run(*args):
        return subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.PIPE,
                              text=True).stdout.strip()

    assert run("-c", "import torch; print(torch.__version__)") == "2.13.0+cu130"  # the label pip never saw
    assert run(str(ROOT / "scripts" / "pinned_requirements.py"), "torch") == "torch==2.13.0"
    install = (ROOT / "scripts" / "install.sh").read_text()
    assert "torch.__version__" not in install and install.count("pinned_requirements.py\" torch") == 2


@pytest.mark.end_to_end
def test_a_second_environment_imports_the_shared_torch_without_a_copy(tmp_path):
    """scripts/share_packages.py: an environment made beside .venv sees .venv's torch (and what torch requires) as
    installed, through links, and nothing else of .venv."""
    import importlib.metadata
    import os
    import subprocess
    import sys
    import sysconfig

    env_dir, shared = tmp_path / "env", tmp_path / "env" / "shared"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    listed = subprocess.run([sys.executable, str(ROOT / "scripts" / "share_packages.py"), str(shared), "torch"],
                            check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    torch_version = importlib.metadata.version("torch")
    assert f"torch=={torch_version}" in listed and any(line.startswith("sympy==") for line in listed)
    assert all(os.path.islink(shared / name) for name in os.listdir(shared))
    assert os.path.realpath(shared / "torch") == os.path.dirname(torch.__file__)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    assert site != sysconfig.get_paths()["purelib"]
    with open(os.path.join(site, "shared.pth"), "w") as f:
        f.write(f"{shared}\n")
    probe = ("import importlib.metadata as m, importlib.util as u, torch; "
             "print(m.version('torch'), torch.ones(2).sum().item(), u.find_spec('fairseq'), u.find_spec('nltk'))")
    out = subprocess.run([str(python), "-c", probe], check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    assert out == [torch_version, "2.0", "None", "None"]


def test_what_a_shared_package_requires_through_extras_is_shared_too(tmp_path):
    """torch's CUDA build requires ``cuda-toolkit[cublas,...]``, whose extras name the nvidia packages: they are
    shared too, or pip in the second environment installs them again (about 1 GB)."""
    import subprocess
    import sys

    site = tmp_path / "site"

    def dist(name: str, *requires: str) -> None:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" +
                                       "".join(f"Requires-Dist: {r}\n" for r in requires))
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n{name}-1.0.dist-info/METADATA,,\n")

    dist("top", "toolkit[runtime]", "plain")
    dist("toolkit", "runtime_lib; extra == 'runtime'", "unused_lib; extra == 'other'")
    for name in ("plain", "runtime_lib", "unused_lib"):
        dist(name)
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "share_packages.py"), str(tmp_path / "shared"),
                          "top"], env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, check=True,
                         stdout=subprocess.PIPE, text=True).stdout.split()
    assert out == ["plain==1.0", "runtime_lib==1.0", "toolkit==1.0", "top==1.0"]
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == sorted(
        f"{name}{suffix}" for name in ("plain", "runtime_lib", "toolkit", "top") for suffix in ("", "-1.0.dist-info"))
