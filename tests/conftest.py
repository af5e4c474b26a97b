"""Shared helpers and fixtures.

- ``run_cli``: a console script (ours or fairseq's), by default called in this process (its entry point with
  ``sys.argv`` set, its output and log captured), so a test pays no 3-7 s interpreter start; with
  ``separate_process=True`` run as a user runs it, in a subprocess (torchrun, distributed runs, exit status).
- ``fairseq_train``: the one fairseq-train argument block of the plugin's runs.
- Session-scoped fixtures, built once per xdist worker (``tmp_path_factory``): binarized corpora and one
  pre-trained tiny model of each kind, for every test that needs "some pre-trained model of kind X".
"""
import contextlib
import dataclasses
import functools
import importlib.metadata
import io
import logging
import os
import random
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from segatron_fairseq import PLUGIN_DIR  # noqa: F401  (the --user-dir of every test)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOG_FORMAT = "%(asctime)s | %(levelname)s | %(name)s | %(message)s"  # fairseq's and segatron-preprocess's


# the machine's cores shared among the pytest-xdist workers: one thread each for `-n 2` on 2 cores, every core for a
# test run alone (the memory-heavy ones); the subprocesses the tests start get the same share
THREADS = max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def pytest_configure(config):
    import torch

    torch.set_num_threads(THREADS)


@functools.cache
def _entry_point(name: str):
    found = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == name]
    if not found:
        raise LookupError(f"no console script {name!r} is installed")
    return found[0].load()


class _Tee(io.TextIOBase):
    """A text stream writing to each of ``streams``."""

    def __init__(self, *streams):
        super().__init__()
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)


@contextlib.contextmanager
def _captured_output(stderr_alone=None):
    """stdout, stderr and the root logger (INFO, fairseq's format) into one buffer; stderr also into
    ``stderr_alone`` when given."""
    buffer = io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
    root.handlers = [handler]
    root.setLevel(logging.INFO)
    try:
        stderr = buffer if stderr_alone is None else _Tee(buffer, stderr_alone)
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(stderr):
            yield buffer
    finally:
        root.handlers = handlers
        root.setLevel(level)


def _stop_data_threads() -> None:
    """fairseq's prefetching threads of a run that stopped mid-epoch (--max-update) would hold their DataLoader
    workers until exit; the patched fairseq stops them at exit, here after each run."""
    iterators = sys.modules.get("fairseq.data.iterators")
    if iterators is not None:
        iterators._stop_consumers()


def _forget_earlier_runs() -> None:
    """What fairseq keeps at module level from one run to the next, as a new process has it: the best validation
    loss (``save_checkpoint.best``: whether checkpoint_best.pt is written), early stopping's counters, and the
    tensorboard writers of each split."""
    from fairseq import checkpoint_utils
    from fairseq.logging import progress_bar
    from fairseq_cli import train

    leftovers = {checkpoint_utils.save_checkpoint: ("best",), train.should_stop_early: ("best", "num_runs")}
    for function, names in leftovers.items():
        for name in names:
            if hasattr(function, name):
                delattr(function, name)
    for writer in progress_bar._tensorboard_writers.values():
        writer.close()
    progress_bar._tensorboard_writers.clear()


@contextlib.contextmanager
def _kept_random_state():
    """The test's random state (Python, numpy, torch) as it was before a run that reseeds it."""
    import numpy as np
    import torch

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])


@contextlib.contextmanager
def _fresh_hydra_version_base():
    """Hydra's compatibility level as a new process has it (unset): a test that composed a config with
    ``version_base=None`` set it to 1.3, under which fairseq's ``hydra.experimental.initialize`` refuses to run."""
    from hydra import version

    base = version.VersionBase.instance()
    saved, base.version_base = base.version_base, version._UNSPECIFIED_
    try:
        yield
    finally:
        base.version_base = saved


# fairseq's commands load data in this process too: a DataLoader worker forked from a process with threads (the test
# process) can take the 5 s of torch's shutdown timeout to end, each time a run leaves its iterators
DATA_IN_THIS_PROCESS = {name: ["--num-workers", "0"]
                        for name in ("fairseq-train", "fairseq-eval-lm", "fairseq-generate", "fairseq-interactive",
                                     "fairseq-validate")}
DATA_IN_THIS_PROCESS["fairseq-hydra-train"] = ["dataset.num_workers=0"]
# launchers of other processes: a test runs them with separate_process=True
SEPARATE_PROCESS_ONLY = ("torchrun",)


def _with_data_in_this_process(name, argv):
    """``argv`` with the command's DATA_IN_THIS_PROCESS option, unless the test gives that option itself."""
    extra = DATA_IN_THIS_PROCESS.get(name, [])
    if not extra or any(arg.split("=")[0] == extra[0].split("=")[0] for arg in argv):
        return argv
    return argv + extra


def _run_in_process(name, argv, cwd, stderr_alone=None):
    if name in SEPARATE_PROCESS_ONLY:
        raise ValueError(f"{name} starts processes of its own: run it with separate_process=True")
    function = _entry_point(name)
    argv = _with_data_in_this_process(name, argv)
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    _forget_earlier_runs()
    with _captured_output(stderr_alone) as buffer, _fresh_hydra_version_base(), _kept_random_state():
        sys.argv = [name, *argv]
        if cwd is not None:
            os.chdir(cwd)
        try:
            function()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
        except Exception:  # what the interpreter would print before exiting 1
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            _stop_data_threads()
    return code, buffer.getvalue()


def _run_subprocess(name, argv, cwd):
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(THREADS))
    proc = subprocess.run([str(BIN / name), *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def run_cli(name, *args, cwd=None, expect_ok=True, separate_process=False):
    """Run console script ``name`` with ``args``; return its combined output (stdout, stderr, log)."""
    argv = list(map(str, args))
    code, out = (_run_subprocess if separate_process else _run_in_process)(name, argv, cwd)
    command = " ".join([name, *argv])
    if expect_ok and code != 0:
        pytest.fail(f"{command} exited {code}:\n{out[-6000:]}")
    if not expect_ok and code == 0:
        pytest.fail(f"{command} succeeded but should have failed:\n{out[-3000:]}")
    return out


@dataclasses.dataclass
class Refusal:
    """What a console script that refused its input left: its exit status, its stderr, and all its output."""

    code: int
    stderr: str
    output: str


def run_cli_refused(name, *args, cwd=None) -> Refusal:
    """Run console script ``name`` with ``args`` in this process, expecting it to fail."""
    stderr = io.StringIO()
    code, out = _run_in_process(name, list(map(str, args)), cwd, stderr)
    if code == 0:
        pytest.fail(f"{name} {' '.join(map(str, args))} succeeded but should have failed:\n{out[-3000:]}")
    return Refusal(code, stderr.getvalue(), out)


def fairseq_train(data, *, task, arch, criterion, save_dir, lr=1e-3, extra=(), expect_ok=True,
                  command=("fairseq-train",), separate_process=False):
    """fairseq-train of the plugin on ``data`` (adam at ``lr``, on the CPU, into ``save_dir``); ``extra``: the
    run's own options. ``command``: the launcher and its options, e.g. ``("torchrun", ..., "-m",
    "fairseq_cli.train")``."""
    return run_cli(*command, data, "--user-dir", PLUGIN_DIR, "--task", task, "--arch", arch, "--criterion",
                   criterion, "--optimizer", "adam", "--lr", lr, "--save-dir", save_dir, "--cpu", *extra,
                   expect_ok=expect_ok, separate_process=separate_process)


def binarized_wikitext(directory, train_documents: int, valid_documents: int, seed: int):
    """``directory``/train.txt and valid.txt (generated WikiText), binarized into ``directory``/bin."""
    from corpus import make_documents, write_wikitext

    write_wikitext(directory / "train.txt", make_documents(train_documents, seed=seed))
    write_wikitext(directory / "valid.txt", make_documents(valid_documents, seed=seed + 1))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", directory / "train.txt",
            "--validpref", directory / "valid.txt", "--destdir", directory / "bin")
    return directory


def binarized_training_text(directory, documents: int, seed: int, *options):
    """``directory``/train.txt (``documents`` generated WikiText documents), binarized into ``directory``/bin with
    the same text as its valid split (runs that check training, not generalisation); ``options``: more
    segatron-preprocess options. Returns the bin directory."""
    from corpus import make_documents, write_wikitext

    write_wikitext(directory / "train.txt", make_documents(documents, seed=seed))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", directory / "train.txt",
            "--validpref", directory / "train.txt", "--destdir", directory / "bin", *options)
    return directory / "bin"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (for torchrun)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _hydra_version_base_restored():
    """hydra's version base is one per process: a test that composes a config with ``version_base=None`` sets it
    to hydra's own version, after which fairseq's ``convert_namespace_to_omegaconf`` (``hydra.experimental``)
    raises ImportError in the same pytest worker. Each test leaves the base as it found it."""
    from hydra.version import VersionBase

    saved = VersionBase.instance().version_base
    yield
    VersionBase.instance().version_base = saved


@pytest.fixture
def cli():
    return run_cli


def write_word_corpus(path, words, documents: int, seed: int = 0) -> None:
    """A lines corpus: ``documents`` documents of 4 sentences of 12 of ``words`` each, ending in " ."."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for d in range(documents):
            if d:
                f.write("\n")
            for _ in range(4):
                f.write(" ".join(rng.choice(words) for _ in range(12)) + " .\n")


# ---- one pre-trained tiny model per kind, per xdist worker ------------------------------------------------------

# every word the fine-tuning tests write (GLUE pairs, STS, RACE, SQuAD), so none is <unk> to the shared models
FINETUNING_WORDS = ([f"w{i}" for i in range(12)] + ["key"] +
                    "the crab lives near a reef it hides under ledge fish swim far away".split() +
                    "Tom has red ball plays in park His sister cat The It".split())


@pytest.fixture(scope="session")
def segabert_corpus(tmp_path_factory):
    """A lines corpus binarized (``bin``): the generated lobster documents (the hub tests' text) and documents of
    FINETUNING_WORDS."""
    from corpus import make_documents, write_lines

    tmp = tmp_path_factory.mktemp("segabert_corpus")
    write_lines(tmp / "lobster.txt", make_documents(30, seed=51))
    write_word_corpus(tmp / "words.txt", FINETUNING_WORDS, 30)
    (tmp / "corpus.txt").write_text((tmp / "lobster.txt").read_text() + "\n" + (tmp / "words.txt").read_text())
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "words.txt", "--destdir", tmp / "bin")
    return tmp / "bin"


def _pretrained_segabert_kind(corpus, directory, arch):
    fairseq_train(corpus, task="segabert_mlm", arch=arch, criterion="masked_lm", save_dir=directory, lr=3e-3,
                  extra=["--tokens-per-sample", 32, "--batch-size", 8, "--max-update", 10, "--no-epoch-checkpoints",
                         "--disable-validation"])
    return directory / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def segabert_checkpoint(segabert_corpus, tmp_path_factory):
    """segabert_tiny after 10 updates on ``segabert_corpus`` (32 tokens per sample)."""
    return _pretrained_segabert_kind(segabert_corpus, tmp_path_factory.mktemp("segabert"), "segabert_tiny")


@pytest.fixture(scope="session")
def segabert_bert_checkpoint(segabert_corpus, tmp_path_factory):
    """segabert_bert_tiny (the BERT baseline: positions, no index tables) after 10 updates on ``segabert_corpus``."""
    return _pretrained_segabert_kind(segabert_corpus, tmp_path_factory.mktemp("segabert_bert"), "segabert_bert_tiny")


ALBERT_TINY = ["--share-encoder-layers", "all", "--factorized-embed-dim", 16]


@pytest.fixture(scope="session")
def albert_checkpoint(segabert_corpus, tmp_path_factory):
    """segabert_tiny as ALBERT (``ALBERT_TINY``: E 16, all layers shared) after 10 updates of MLM and
    sentence-order prediction on ``segabert_corpus``; fine-tuning passes ``ALBERT_TINY`` again."""
    directory = tmp_path_factory.mktemp("albert")
    fairseq_train(segabert_corpus, task="segabert_mlm", arch="segabert_tiny", criterion="masked_lm_sop",
                  save_dir=directory, lr=3e-3,
                  extra=[*ALBERT_TINY, "--sentence-order-prediction", "--tokens-per-sample", 32, "--batch-size", 8,
                         "--max-update", 10, "--no-epoch-checkpoints", "--disable-validation"])
    return directory / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def xlnet_checkpoints(segabert_corpus, tmp_path_factory):
    """{positions: checkpoint_last.pt} of xlnet_tiny with --positions token and segatron after 6 updates of the
    permutation LM on ``segabert_corpus`` (samples of 32 tokens, reuse part 16, memory 16)."""
    directory = tmp_path_factory.mktemp("xlnet")
    checkpoints = {}
    for positions in ("token", "segatron"):
        fairseq_train(segabert_corpus, task="xlnet_plm", arch="xlnet_tiny", criterion="xlnet_plm",
                      save_dir=directory / positions, lr=3e-3,
                      extra=["--positions", positions, "--tokens-per-sample", 32, "--reuse-len", 16, "--batch-size", 4,
                             "--max-update", 6, "--no-epoch-checkpoints", "--disable-validation"])
        checkpoints[positions] = directory / positions / "checkpoint_last.pt"
    return checkpoints


# the pre-trained kinds the fine-tuning tests start from: architecture, model options, the fixture of the checkpoint
# (a fixture of several checkpoints: {the first model option's value or the architecture: checkpoint})
PRETRAINED_KINDS = {"segabert": ("segabert_tiny", [], "segabert_checkpoint"),
                    "bert": ("segabert_bert_tiny", [], "segabert_bert_checkpoint"),
                    "albert": ("segabert_tiny", ALBERT_TINY, "albert_checkpoint"),
                    "electra": ("segabert_electra_tiny", [], "electra_checkpoints"),
                    "xlnet": ("xlnet_tiny", ["--positions", "segatron"], "xlnet_checkpoints"),
                    "xlnet_token": ("xlnet_tiny", ["--positions", "token"], "xlnet_checkpoints")}


def quick_first(*params):
    """``params`` for ``pytest.mark.parametrize``, every one after the first marked end-to-end: the quick tier
    fine-tunes from the first pre-trained kind, the full suite from each."""
    return [params[0], *(pytest.param(*(p if isinstance(p, tuple) else (p,)), marks=pytest.mark.end_to_end)
                         for p in params[1:])]


def pretrained_kind(request, kind):
    """(architecture, model options, checkpoint) of a ``PRETRAINED_KINDS`` kind."""
    arch, options, fixture = PRETRAINED_KINDS[kind]
    checkpoint = request.getfixturevalue(fixture)
    if isinstance(checkpoint, dict):
        checkpoint = checkpoint[options[1] if options else arch]
    return arch, options, checkpoint


@pytest.fixture(scope="session")
def segatron_xl_trained(tmp_path_factory):
    """A WikiText corpus (``bin``, 30 documents and 4 for valid), segatron_xl_tiny trained 30 updates on it
    (``ckpt/checkpoint_last.pt``, its log ``train.log``: train every 5 updates, valid every 10), and two texts
    to score (``score.txt``, ``other.txt``)."""
    from corpus import make_documents, write_wikitext

    tmp = binarized_wikitext(tmp_path_factory.mktemp("segatron_xl"), 30, 4, seed=41)
    log = fairseq_train(tmp / "bin", task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                        save_dir=tmp / "ckpt", lr=2e-3,
                        extra=["--batch-size", 4, "--tgt-len", 16, "--max-update", 30, "--no-epoch-checkpoints",
                               "--log-format", "simple", "--log-interval", 5, "--validate-interval-updates", 10])
    (tmp / "train.log").write_text(log)
    write_wikitext(tmp / "score.txt", make_documents(3, seed=99))
    write_wikitext(tmp / "other.txt", make_documents(2, seed=98))
    return tmp


@pytest.fixture(scope="session")
def cross_thought_trained(tmp_path_factory):
    """A lines corpus (``bin``, 30 documents) and cross_thought_tiny pre-trained 10 updates on it
    (``ckpt/checkpoint_last.pt``; samples of 4 sequences of 16 tokens)."""
    from corpus import make_documents, write_lines

    tmp = tmp_path_factory.mktemp("cross_thought")
    write_lines(tmp / "corpus.txt", make_documents(30, seed=31))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "corpus.txt", "--destdir", tmp / "bin")
    fairseq_train(tmp / "bin", task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                  save_dir=tmp / "ckpt", extra=["--num-sequences", 4, "--sequence-length", 16, "--batch-size", 8,
                                                "--max-update", 10, "--no-epoch-checkpoints", "--disable-validation"])
    return tmp


@pytest.fixture(scope="session")
def electra_checkpoints(segabert_corpus, tmp_path_factory):
    """{arch: checkpoint_last.pt} of segabert_electra_tiny and segabert_bert_electra_tiny after 4 updates on
    ``segabert_corpus`` (criterion electra, ELECTRA's masking: 15% kept, none random; 512 positions, as
    fine-tuning's)."""
    directory = tmp_path_factory.mktemp("electra")
    checkpoints = {}
    for arch in ("segabert_electra_tiny", "segabert_bert_electra_tiny"):
        fairseq_train(segabert_corpus, task="segabert_mlm", arch=arch, criterion="electra", save_dir=directory / arch,
                      lr=3e-3, extra=["--leave-unmasked-prob", 0.15, "--random-token-prob", 0, "--tokens-per-sample",
                                      32, "--max-positions", 512, "--batch-size", 8, "--max-update", 4,
                                      "--no-epoch-checkpoints", "--disable-validation"])
        checkpoints[arch] = directory / arch / "checkpoint_last.pt"
    return checkpoints


@pytest.fixture(scope="session")
def cloze_trained(tmp_path_factory):
    """A WikiText corpus (``bin``: 30 documents, 4 for valid) and cloze_two_tower_tiny trained 30 updates on it
    with the cloze loss (``ckpt/checkpoint_last.pt``; blocks of 64 tokens); its log ``train.log``."""
    tmp = binarized_wikitext(tmp_path_factory.mktemp("cloze"), 30, 4, seed=61)
    log = fairseq_train(tmp / "bin", task="cloze_lm", arch="cloze_two_tower_tiny", criterion="cloze_lm",
                        save_dir=tmp / "ckpt", lr=2e-3,
                        extra=["--tokens-per-sample", 64, "--batch-size", 8, "--max-update", 30,
                               "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", 10])
    (tmp / "train.log").write_text(log)
    return tmp
