"""What the console scripts write, against odd destinations, a full disk and SIGTERM: no tool deletes what it did not
make, replaces a device, FIFO or socket (even with ``--overwrite``), leaves a truncated file, or leaves anything
behind when it is terminated midway; a rerun then succeeds.

A refusal must end with one line ``PROG: error: ...`` naming the path, a non-zero exit, no traceback and every
entry of the test's folder as it was. The paths a case's arguments name (written into the folder): ``{fifo}``,
``{socket}``, ``{device}`` (a character device, /dev/null's numbers; the case is skipped where only root can
make one), ``{notes}``, ``{log}`` (a fairseq-train log), ``{state}``, ``{folder}``, ``{missing}``, ``{here}``;
``{split}`` (a folder whose ``wiki.train.tokens`` is a FIFO), ``{picture}`` (``picture.png`` a FIFO).
"""
import errno
import os
import signal
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

import pytest
from cli_errors import Case, assert_user_error, listing
from conftest import BIN, THREADS, run_cli, run_cli_refused
from terminate_midway import HELD

FIFO = "fifo: --out is a named pipe (FIFO), which is never replaced"
NOT_REGULAR = {
    "rank-output-fifo": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} --embeddings "
                             "{here}/emb.pt --output {fifo} --overwrite", FIFO.replace("--out", "--output")),
    "rank-output-device": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} "
                               "--embeddings {here}/emb.pt --output {device} --overwrite",
                               "device: --output is a character device, which is never replaced", ("device",)),
    "rank-embeddings-socket": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} "
                                   "--embeddings {socket} --output {here}/ranked.jsonl",
                                   "socket: --embeddings is a socket, which is never replaced"),
    "predict-squad-out-fifo": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} --input "
                                   "{notes} --out {fifo} --overwrite", FIFO),
    "predict-squad-null-odds-device": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                           "--input {notes} --out {here}/p.json --null-odds {device} --overwrite",
                                           "device: --null-odds is a character device", ("device",)),
    "predict-ner-out-socket": Case("segatron-predict", "ner --checkpoint {state} --pretrain-data {folder} --input "
                                   "{notes} --out {socket} --overwrite", "socket: --out is a socket"),
    "plot-curves-out-fifo": Case("segatron-plot", "curves {log} --out {picture} --overwrite",
                                 "picture.png: --out is a named pipe (FIFO)"),
    "split-output-fifo": Case("segatron-split-wikitext", "{notes} {split} --overwrite",
                              "wiki.train.tokens: an output file is a named pipe (FIFO)"),
}

LOG = "".join(f"2024-01-01 00:00:0{k} | INFO | train_inner | epoch 001: loss=5.0, ppl={40 - k}.5, wps=1, "
              f"num_updates={k * 10}, lr=0.001\n" for k in range(1, 4))


def _device(path: Path) -> None:
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")


def _inputs(folder: Path, needs) -> dict:
    """The paths of the module doc, written into ``folder``."""
    import torch

    os.mkfifo(folder / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "socket"))
    server.close()
    if "device" in needs:
        _device(folder / "device")
    (folder / "notes.txt").write_text("some notes\n")
    (folder / "train.log").write_text(LOG)
    (folder / "folder").mkdir()
    (folder / "split").mkdir()
    os.mkfifo(folder / "split" / "wiki.train.tokens")
    os.mkfifo(folder / "picture.png")
    torch.save({"w": torch.zeros(2)}, folder / "state.pt")
    paths = {name: str(folder / file) for name, file in (
        ("fifo", "fifo"), ("socket", "socket"), ("device", "device"), ("notes", "notes.txt"), ("log", "train.log"),
        ("folder", "folder"), ("missing", "missing.txt"), ("split", "split"), ("picture", "picture"),
        ("state", "state.pt"))}
    return {**paths, "here": str(folder)}


def _kinds(folder: Path) -> dict:
    """Each entry of ``folder`` and what it is (``stat.filemode``'s letter)."""
    return {path.name: stat.filemode(path.lstat().st_mode)[0] for path in folder.rglob("*")}


@pytest.mark.parametrize("case", NOT_REGULAR.values(), ids=NOT_REGULAR.keys())
def test_an_output_that_is_not_a_regular_file_is_refused_even_with_overwrite(case, tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    paths = _inputs(folder, case.needs)
    before, kinds = listing(folder), _kinds(folder)
    refusal = run_cli_refused(case.program, *case.args.format(**paths).split(), cwd=folder)
    assert_user_error(refusal.stderr, case.program, case.says)
    assert listing(folder) == before and _kinds(folder) == kinds, "the folder changed"


def test_export_keeps_a_folder_named_like_its_staging(segabert_checkpoint, segabert_corpus, tmp_path):
    """``keep.partial`` was the export's fixed staging name for ``--out keep``, and was removed unseen."""
    (tmp_path / "keep.partial").mkdir()
    (tmp_path / "keep.partial" / "notes.txt").write_text("notes")
    run_cli("segatron-export", "hf", "--checkpoint", segabert_checkpoint, "--data", segabert_corpus, "--out",
            tmp_path / "keep")
    assert (tmp_path / "keep.partial" / "notes.txt").read_text() == "notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep", "keep.partial"]
    assert (tmp_path / "keep" / "model.safetensors").is_file()


def test_import_into_an_existing_folder_adds_its_two_files_and_nothing_else(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("notes")
    run_cli("segatron-import", "hf-bert", "--model-dir", _tiny_hf_bert(tmp_path / "hf"), "--out", tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["checkpoint.pt", "dict.txt", "notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "out"]


def test_plot_on_a_full_disk_keeps_the_old_pictures_and_names_the_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    (tmp_path / "train.log").write_text(LOG)
    run_cli("segatron-plot", "curves", tmp_path / "train.log", "--out", tmp_path / "c")
    before = {name: (tmp_path / name).read_bytes() for name in ("c.png", "c.svg")}

    def full_disk(figure, path, **kwargs):  # as savefig on a full disk: some bytes written, then ENOSPC
        with open(path, "wb") as f:
            f.write(b"\x89PNG" + bytes(100))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Figure, "savefig", full_disk)
    refusal = run_cli_refused("segatron-plot", "curves", tmp_path / "train.log", "--out", tmp_path / "c",
                              "--overwrite")
    assert_user_error(refusal.stderr, "segatron-plot", f"{tmp_path / 'c.png'}: No space left on device")
    assert {name: (tmp_path / name).read_bytes() for name in ("c.png", "c.svg")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "c.svg", "train.log"]


# ---- SIGTERM midway -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Termination:
    """``program args...`` run with ``hold`` (``terminate_midway.py``'s MODULE:ATTRIBUTE) held open after its first
    call, then sent SIGTERM."""

    program: str
    args: str
    hold: str
    needs: Tuple[str, ...] = ()


TERMINATED = {
    # the checkpoint's torch.save, dict.txt already written
    "import-hf-bert": Termination("segatron-import", "hf-bert --model-dir {hf_bert} --out {here}/imported",
                                  "torch:save", ("hf_bert",)),
    # model.safetensors's bytes, the staging directory made
    "export-hf": Termination("segatron-export", "hf --checkpoint {segabert} --data {segabert_data} --out {here}/hf",
                             "safetensors.torch:save", ("segabert",)),
    # the candidate embeddings' torch.save
    "rank": Termination("cross-thought-rank", "--path {cross_thought} --data {cross_thought_data} --questions "
                        "{questions} --passages {questions} --embeddings {here}/emb.pt --output {here}/ranked.jsonl",
                        "torch:save", ("cross_thought",)),
    # c.png written, c.svg not yet; the old pair must stay
    "plot-curves-overwrite": Termination("segatron-plot", "curves {log} --out {here}/c --overwrite",
                                         "matplotlib.figure:Figure.savefig", ("old_pictures",)),
    # the first rename of three: the old wiki.train.tokens moved aside
    "split-wikitext-overwrite": Termination("segatron-split-wikitext", "{wikitext} {here}/split --valid-articles 1 "
                                            "--test-articles 1 --overwrite", "os:replace", ("old_split",)),
}


def _termination_inputs(folder: Path, request, needs) -> dict:
    from corpus import make_documents, write_wikitext

    (folder / "train.log").write_text(LOG)
    (folder / "questions.txt").write_text("the lobster lives in the sea\nwhere is the reef\n")
    write_wikitext(folder / "wiki.txt", make_documents(4, seed=7))
    paths = {"here": str(folder), "log": str(folder / "train.log"), "questions": str(folder / "questions.txt"),
             "wikitext": str(folder / "wiki.txt")}
    if "hf_bert" in needs:
        paths["hf_bert"] = str(_tiny_hf_bert(folder.parent / "hf_bert"))
    if "segabert" in needs:
        paths.update(segabert=str(request.getfixturevalue("segabert_checkpoint")),
                     segabert_data=str(request.getfixturevalue("segabert_corpus")))
    if "cross_thought" in needs:
        trained = request.getfixturevalue("cross_thought_trained")
        paths.update(cross_thought=str(trained / "ckpt" / "checkpoint_last.pt"),
                     cross_thought_data=str(trained / "bin"))
    if "old_pictures" in needs:
        run_cli("segatron-plot", "curves", folder / "train.log", "--out", folder / "c")
    if "old_split" in needs:
        run_cli("segatron-split-wikitext", folder / "wiki.txt", folder / "split", "--valid-articles", 2,
                "--test-articles", 1)
    return paths


def _tiny_hf_bert(directory: Path) -> Path:
    """A random 1-layer BertForMaskedLM saved with save_pretrained, its vocab.txt beside it."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=16, max_position_embeddings=16)
    transformers.BertForMaskedLM(config).save_pretrained(directory)
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                                                   [f"tok{i}" for i in range(15)]) + "\n")
    return directory


def _terminated_midway(case: Termination, args, cwd: Path) -> subprocess.CompletedProcess:
    """The run of ``case`` held at its call and sent SIGTERM there: exit status and stderr."""
    script = Path(__file__).with_name("terminate_midway.py")
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(THREADS), PATH=f"{BIN}:{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, str(script), case.hold, case.program, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if line.strip() == HELD:
                proc.send_signal(signal.SIGTERM)
                break
        lines += proc.stderr.readlines()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any(line.strip() == HELD for line in lines), "".join(lines)[-3000:]
    return subprocess.CompletedProcess(proc.args, proc.returncode, None, "".join(lines))


def _files(found: dict) -> dict:
    """``listing``'s entries less the folders' modification times, which the staging beside an output changes."""
    return {path: value if os.path.isfile(path) else "folder" for path, value in found.items()}


@pytest.mark.end_to_end  # a real process sent a real SIGTERM
@pytest.mark.parametrize("case", TERMINATED.values(), ids=TERMINATED.keys())
def test_sigterm_midway_leaves_nothing_and_a_rerun_succeeds(case, tmp_path, request):
    folder = tmp_path / "work"
    folder.mkdir()
    paths = _termination_inputs(folder, request, case.needs)
    before = listing(folder)
    args = case.args.format(**paths).split()
    stopped = _terminated_midway(case, args, folder)
    assert "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    assert stopped.stderr.strip().splitlines()[-1] == f"{case.program}: terminated"
    assert _files(listing(folder)) == _files(before), "the folder changed"
    run_cli(case.program, *args, cwd=folder)
    assert listing(folder) != before
