"""The binarizer's promises: checked inputs, refused conflicts, all-or-nothing output, clean stops on
signals, and readers that check a split's whole set of files. A refused run leaves the destination
byte-identical."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import numpy as np
import pytest
from conftest import BIN, binarized_wikitext, fairseq_train, run_cli, run_cli_refused
from corpus import make_documents, write_jsonl, write_lines, write_wikitext


def snapshot(directory):
    """Every file under ``directory`` with its bytes (None: the directory does not exist)."""
    if not directory.exists():
        return None
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def refused(*args, expect):
    out = run_cli("segatron-preprocess", *args, expect_ok=False)
    assert expect in out, out[-2000:]
    assert "Traceback" not in out, out[-3000:]
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return binarized_wikitext(tmp_path_factory.mktemp("safety"), 30, 4, seed=21)


@pytest.fixture
def dest(corpus, tmp_path):
    """A copy of a finished destination."""
    shutil.copytree(corpus / "bin", tmp_path / "bin")
    return tmp_path / "bin"


# ---- the splitter is an explicit choice, recorded ---------------------------------------------------

def test_splitter_is_recorded_and_a_second_one_is_refused(corpus, dest, tmp_path):
    recorded = json.loads((dest / "segatron_preprocess.json").read_text())["sentence_splitter"]
    assert recorded["name"] == "punkt-trained" and len(recorded["sha256"]) == 64  # the default, not "auto"
    other = tmp_path / "other"
    write_wikitext(tmp_path / "other.txt", make_documents(30, seed=99))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "other.txt",
            "--destdir", other)
    before = snapshot(dest)
    out = refused("--input-format", "wikitext", "--testpref", corpus / "valid.txt", "--destdir", dest,
                  "--sentence-splitter", other / "punkt_tab", expect="was binarized with the sentence splitter")
    assert recorded["sha256"][:12] in out
    assert snapshot(dest) == before
    # the splitter saved in the destination is reused, and recorded the same
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--testpref", corpus / "valid.txt",
            "--destdir", dest)
    assert json.loads((dest / "segatron_preprocess.json").read_text())["sentence_splitter"]["sha256"] == \
        recorded["sha256"]


# ---- refused runs leave the destination as it was ---------------------------------------------------

def test_refused_dictionary_conflict_writes_no_sentencepiece_model(corpus, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "dict.txt").write_text("alpha 5\nbeta 3\n")
    before = snapshot(dest)
    refused("--input-format", "wikitext", "--trainpref", corpus / "train.txt", "--destdir", dest, "--bpe",
            "sentencepiece", "--bpe-vocab-size", 60, expect="holds a different dictionary")
    assert snapshot(dest) == before  # no sentencepiece.model, no punkt_tab


def test_all_blank_input_writes_nothing(tmp_path):
    (tmp_path / "blank.txt").write_text(" \n\n \n")
    refused("--input-format", "wikitext", "--trainpref", tmp_path / "blank.txt", "--destdir", tmp_path / "bin",
            expect="holds only blank lines")
    assert not (tmp_path / "bin").exists()
    (tmp_path / "empty.jsonl").write_text('{"text": ""}\n{"text": "  "}\n')  # documents without text
    (tmp_path / "bin").mkdir()
    refused("--input-format", "jsonl", "--trainpref", tmp_path / "empty.jsonl", "--destdir", tmp_path / "bin",
            expect="no text found for split 'train'")
    assert snapshot(tmp_path / "bin") == {}  # no dictionary, no Punkt model


def test_bad_utf8_in_a_later_split_is_found_before_anything_is_written(corpus, tmp_path):
    data = (corpus / "valid.txt").read_bytes()
    (tmp_path / "valid.txt").write_bytes(data[: len(data) // 2] + b"\n caf\xe9 \n" + data[len(data) // 2:])
    line = data[: len(data) // 2].count(b"\n") + 2
    started = time.time()
    refused("--input-format", "wikitext", "--trainpref", corpus / "train.txt", "--validpref",
            tmp_path / "valid.txt", "--destdir", tmp_path / "bin", expect=f"valid.txt: line {line} is not valid UTF-8")
    assert not (tmp_path / "bin").exists()
    assert time.time() - started < 10  # no training, no binarizing first


def test_a_failure_after_work_started_leaves_the_destination_as_it_was(corpus, dest, tmp_path):
    """A jsonl line that breaks only late in the file: train is binarized in staging, then the run fails."""
    write_jsonl(tmp_path / "train.jsonl", make_documents(20, seed=5))
    with open(tmp_path / "train.jsonl", "a") as f:
        f.write('{"title": "no text field"}\n')
    fresh = tmp_path / "fresh"
    refused("--input-format", "jsonl", "--trainpref", tmp_path / "train.jsonl", "--destdir", fresh,
            "--workers", 2, "--chunk-bytes", 2000, expect="is not a JSON object with a string 'text' field")
    assert not fresh.exists()


def test_bpe_vocab_size_and_model_conflicts(corpus, tmp_path):
    dest = tmp_path / "sp"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", corpus / "train.txt",
            "--destdir", dest, "--bpe", "sentencepiece", "--bpe-vocab-size", 60)
    assert json.loads((dest / "segatron_preprocess.json").read_text())["bpe_vocab_size"] == 60
    before = snapshot(dest)
    refused("--input-format", "wikitext", "--validpref", corpus / "valid.txt", "--destdir", dest, "--bpe",
            "sentencepiece", "--bpe-vocab-size", 80, expect="has 60 pieces, not --bpe-vocab-size 80")
    refused("--input-format", "wikitext", "--validpref", corpus / "valid.txt", "--destdir", dest,
            expect="was binarized with --bpe sentencepiece, this run asks for --bpe none")
    other = tmp_path / "other"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", corpus / "train.txt",
            "--destdir", other, "--bpe", "sentencepiece", "--bpe-vocab-size", 70)
    refused("--input-format", "wikitext", "--validpref", corpus / "valid.txt", "--destdir", dest, "--bpe",
            "sentencepiece", "--bpe-model", other / "sentencepiece.model", expect="is another sentencepiece model")
    assert snapshot(dest) == before
    # without --bpe-vocab-size the destination's model is reused
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--validpref", corpus / "valid.txt",
            "--destdir", dest, "--bpe", "sentencepiece")


@pytest.mark.parametrize("option,value", [("--chunk-bytes", 0), ("--workers", 0), ("--bpe-vocab-size", -5)])
def test_option_values_below_one_are_refused(corpus, tmp_path, option, value):
    refused("--trainpref", corpus / "train.txt", "--destdir", tmp_path / "bin", option, value,
            expect=f"{option} must be >= 1")
    assert not (tmp_path / "bin").exists()


def test_inputs_and_dictionaries_that_are_not_files(corpus, dest, tmp_path):
    before = snapshot(dest)
    refused("--validpref", tmp_path, "--destdir", dest, expect=f"{tmp_path}: input file for split 'valid' is a "
                                                               "directory")
    refused("--validpref", corpus / "valid.txt", "--srcdict", tmp_path, "--destdir", dest,
            expect="the dictionary is a directory")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 5\n")
    refused("--validpref", corpus / "valid.txt", "--srcdict", tmp_path / "latin1.txt", "--destdir", dest,
            expect="latin1.txt: line 1 is not valid UTF-8 (invalid continuation byte)")
    assert snapshot(dest) == before


def test_declared_format_is_checked(tmp_path):
    documents = make_documents(3, seed=8)
    write_jsonl(tmp_path / "docs.jsonl", documents)
    write_lines(tmp_path / "docs.txt", documents)
    refused("--input-format", "lines", "--trainpref", tmp_path / "docs.jsonl", "--destdir", tmp_path / "a",
            expect="use --input-format jsonl")
    refused("--input-format", "jsonl", "--trainpref", tmp_path / "docs.txt", "--destdir", tmp_path / "b",
            expect="docs.txt: line 1 is not a JSON object")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ---- signals ----------------------------------------------------------------------------------------

def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def long_input(corpus, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("long")
    write_wikitext(tmp / "big.txt", make_documents(3000, seed=31))
    return tmp / "big.txt"


def _start_long_run(long_input, corpus, dest):
    """A run with 2 workers, once they run; with its processes: the workers, their forkserver and Python's
    resource tracker. Its temporary directory is the test's (a SIGKILL leaves the forkserver's socket there)."""
    args = ["--input-format", "wikitext", "--trainpref", long_input, "--destdir", dest, "--workers", 2,
            "--chunk-bytes", 50000, "--sentence-splitter", corpus / "bin" / "punkt_tab"]
    env = dict(os.environ, TMPDIR=str(dest.parent))
    proc = subprocess.Popen([str(BIN / "segatron-preprocess"), *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(workers := [w for child in _children(proc.pid) for w in _children(child)]) < 2:
        assert proc.poll() is None and time.time() < deadline, "the workers never started"
        time.sleep(0.05)
    return proc, _children(proc.pid) + workers


def _wait_gone(pids, seconds=10):
    deadline = time.time() + seconds
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.end_to_end
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_workers_and_remove_temporary_files(long_input, corpus, tmp_path, signum):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("unrelated\n")
    proc, workers = _start_long_run(long_input, corpus, dest)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert stderr.strip().splitlines() == [
        f"segatron-preprocess: stopped by {signal.Signals(signum).name}: workers ended, temporary files removed, "
        f"{dest} left as it was"]
    assert _wait_gone(workers) == []
    assert snapshot(dest) == {"keep.txt": b"unrelated\n"}


@pytest.mark.end_to_end
def test_after_sigkill_workers_exit_and_the_next_run_removes_the_abandoned_directory(long_input, corpus, tmp_path):
    dest = tmp_path / "dest"
    proc, workers = _start_long_run(long_input, corpus, dest)
    proc.kill()
    proc.wait(timeout=30)
    assert _wait_gone(workers) == []  # no orphans
    left = [p.name for p in dest.iterdir() if p.name.startswith(".segatron-preprocess-")]
    assert len(left) == 1
    out = run_cli("segatron-preprocess", "--input-format", "wikitext", "--validpref", corpus / "valid.txt",
                  "--destdir", dest, "--srcdict", corpus / "bin" / "dict.txt", "--sentence-splitter",
                  corpus / "bin" / "punkt_tab")
    assert f"removed {dest / left[0]}" in out
    assert not [p for p in dest.iterdir() if p.name.startswith(".segatron-preprocess-")]


# ---- readers check the whole set ---------------------------------------------------------------------

def test_readers_name_missing_and_truncated_files(dest):
    from segatron_fairseq.data import SegmentIndexedDataset

    (dest / "train.sentence.idx").rename(dest / "moved.idx")
    with pytest.raises(FileNotFoundError, match=r"missing .*train\.sentence\.idx"):
        SegmentIndexedDataset(str(dest / "train"))
    out = run_cli("segatron-inspect", dest, "train", 0, expect_ok=False)
    assert "train.sentence.idx" in out and "Traceback" not in out
    (dest / "moved.idx").rename(dest / "train.sentence.idx")

    _as_written_by("0.1.0", dest, "train")  # no manifest: the files are checked on their own
    paragraph_bin = dest / "train.paragraph.bin"
    data = paragraph_bin.read_bytes()
    paragraph_bin.write_bytes(data[:-10])
    with pytest.raises(ValueError, match=r"train\.paragraph\.bin has .* bytes but .*train\.paragraph\.idx "
                                         r"describes"):
        SegmentIndexedDataset(str(dest / "train"))
    paragraph_bin.write_bytes(data)

    token_idx = dest / "train.token.idx"
    token_idx.write_bytes(token_idx.read_bytes()[:30])
    with pytest.raises(ValueError, match=r"train\.token\.idx: not a complete fairseq index"):
        SegmentIndexedDataset(str(dest / "train"))


def test_segatron_lm_notices_a_truncated_paragraph_dataset(dest):
    from segatron_fairseq.tasks.segatron_lm import SegatronLMConfig, SegatronLMTask

    data = (dest / "valid.paragraph.bin").read_bytes()
    (dest / "valid.paragraph.bin").write_bytes(data[: len(data) // 2])
    task = SegatronLMTask.setup_task(SegatronLMConfig(data=str(dest), batch_size=2, batch_size_valid=2,
                                                      train_subset="train", seed=1))
    with pytest.raises(ValueError, match=r"valid\.paragraph\.bin has"):
        task.load_dataset("valid")
    (dest / "train.sentence.idx").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing .*train\.sentence\.idx"):
        task.load_dataset("train")


def test_readers_refuse_a_split_whose_commit_did_not_finish(dest):
    from segatron_fairseq.data import SegmentIndexedDataset

    SegmentIndexedDataset(str(dest / "train"))
    metadata_path = dest / "segatron_preprocess.json"
    metadata = json.loads(metadata_path.read_text())
    assert metadata["splits"]["train"]["state"] == "complete"
    assert metadata["splits"]["train"]["files"]["train.bin"] == (dest / "train.bin").stat().st_size
    writing = json.loads(metadata_path.read_text())
    writing["splits"]["train"] = {"state": "writing"}  # what a commit killed half-way leaves
    metadata_path.write_text(json.dumps(writing))
    with pytest.raises(ValueError, match="did not finish writing this split"):
        SegmentIndexedDataset(str(dest / "train"))
    metadata["splits"]["train"]["files"]["train.sentence.bin"] += 2  # a file of another run
    metadata_path.write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match=r"train\.sentence\.bin has .* its manifest"):
        SegmentIndexedDataset(str(dest / "train"))


@pytest.mark.parametrize("failing, call", [("valid.bin", 1), ("test.idx", 1), ("segatron_preprocess.json", 2)])
def test_a_commit_that_fails_is_undone(corpus, dest, monkeypatch, failing, call):
    """A rename that fails while the commit moves an old file aside (valid.bin), moves a new file in
    (test.idx, the last) or writes the final manifest: every move is undone, the destination is as it was."""
    before = snapshot(dest)
    replace, calls = os.replace, []

    def failing_replace(src, dst):
        if str(dest / failing) in (str(src), str(dst)):
            calls.append(dst)
            if len(calls) == call:
                raise PermissionError(1, "Operation not permitted")
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    refusal = run_cli_refused("segatron-preprocess", "--input-format", "wikitext", "--validpref",
                              corpus / "valid.txt", "--testpref", corpus / "valid.txt", "--destdir", dest)
    assert refusal.stderr.splitlines() == [
        f"segatron-preprocess: error: {dest / failing}: cannot write it (Operation not permitted); {dest} left as "
        f"it was"], refusal.output[-3000:]
    assert snapshot(dest) == before
    assert sorted(p.name for p in dest.iterdir() if p.name.startswith(".")) == []


def test_a_commit_that_cannot_be_undone_keeps_the_previous_files(corpus, dest, monkeypatch):
    previous_bin = (dest / "valid.bin").read_bytes()
    replace = os.replace

    def failing_replace(src, dst):
        moving_in = str(dst) == str(dest / "valid.idx") and ".segatron-preprocess-" in str(src)
        restoring = str(dst) == str(dest / "valid.bin") and ".segatron-previous-" in str(src)
        if moving_in or restoring:
            raise PermissionError(1, "Operation not permitted")
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    refusal = run_cli_refused("segatron-preprocess", "--input-format", "wikitext", "--validpref",
                              corpus / "valid.txt", "--destdir", dest)
    line, = refusal.stderr.splitlines()
    previous, = dest.glob(".segatron-previous-*")
    assert line == (f"segatron-preprocess: error: {dest / 'valid.idx'}: cannot write it (Operation not permitted); "
                    f"undoing the commit failed too at {dest / 'valid.bin'} (Operation not permitted): the "
                    f"destination's previous files are in {previous}")
    assert previous_bin in [p.read_bytes() for p in previous.iterdir()]


def test_destinations_that_cannot_be_used(corpus, tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("a file\n")
    for destdir, problem in ((tmp_path / "loop", "--destdir cannot be used (Too many levels of symbolic links)"),
                             (tmp_path / "dangling", "--destdir is a symbolic link to a path that does not exist"),
                             (tmp_path / "file.txt" / "bin", "--destdir cannot be used (Not a directory)"),
                             (tmp_path / "file.txt", "--destdir is a file, not a directory")):
        refusal = run_cli_refused("segatron-preprocess", "--input-format", "wikitext", "--validpref",
                                  corpus / "valid.txt", "--destdir", destdir)
        assert refusal.stderr.splitlines() == [f"segatron-preprocess: error: {destdir}: {problem}"], refusal.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "file.txt", "loop"]


@pytest.mark.parametrize("unwritable", ["destdir", "lock file"])
def test_a_destination_this_user_cannot_write(corpus, dest, tmp_path, monkeypatch, unwritable):
    """(The tests run as root, whom permissions do not stop: os.mkdir / os.open fail as for another user.)"""
    from segatron_preprocess.staging import LOCK_FILE

    mkdir, open_ = os.mkdir, os.open
    new = tmp_path / "new"
    denied = new if unwritable == "destdir" else dest / LOCK_FILE

    def deny(function):
        def denying(path, *args, **kwargs):
            if str(path) == str(denied):
                raise PermissionError(13, "Permission denied", str(path))
            return function(path, *args, **kwargs)
        return denying

    monkeypatch.setattr(os, "mkdir", deny(mkdir))
    monkeypatch.setattr(os, "open", deny(open_))
    before = snapshot(dest)
    refusal = run_cli_refused("segatron-preprocess", "--input-format", "wikitext", "--validpref",
                              corpus / "valid.txt", "--destdir", new if unwritable == "destdir" else dest)
    assert refusal.stderr.splitlines() == [
        f"segatron-preprocess: error: {denied}: cannot create it (Permission denied); --destdir must be a directory "
        f"this user can write"], refusal.output
    assert not new.exists() and snapshot(dest) == before


def test_inspect_names_a_destination_it_cannot_read(dest, tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "notes.txt").write_text("some notes\n")
    latin1 = tmp_path / "latin1"
    shutil.copytree(dest, latin1)
    (latin1 / "dict.txt").write_bytes((dest / "dict.txt").read_bytes() + "caf\xe9 1\n".encode("latin-1"))
    lines = (dest / "dict.txt").read_bytes().count(b"\n") + 1
    for destdir, problem in ((tmp_path / "nope", "no such directory"),
                             (tmp_path / "notes.txt", "a file, not a segatron-preprocess output directory"),
                             (tmp_path / "loop", "Too many levels of symbolic links"),
                             (tmp_path / "notes.txt" / "bin", "Not a directory")):
        refusal = run_cli_refused("segatron-inspect", destdir, "train", 0)
        assert refusal.stderr.splitlines() == [f"segatron-inspect: error: {destdir}: {problem}"], refusal.output
    refusal = run_cli_refused("segatron-inspect", latin1, "train", 0)
    assert refusal.stderr.splitlines() == [
        f"segatron-inspect: error: {latin1 / 'dict.txt'}: line {lines} is not valid UTF-8 (invalid continuation "
        f"byte)"], refusal.output


def _as_written_by(version: str, dest, split: str) -> None:
    """The manifest of ``split`` in ``dest`` as segatron-preprocess ``version`` wrote it: 0.2.0 without digests,
    0.1.0 without a manifest (its summary alone)."""
    path = dest / "segatron_preprocess.json"
    metadata = json.loads(path.read_text())
    left_out = {"0.2.0": ("sha256", "sampled_sha256", "resources"),
                "0.1.0": ("state", "files", "sha256", "sampled_sha256", "resources")}[version]
    metadata["splits"][split] = {key: value for key, value in metadata["splits"][split].items() if key not in left_out}
    path.write_text(json.dumps(metadata))


def test_readers_refuse_token_ids_outside_the_dictionary(dest):
    """A .bin of the right size written with a larger dictionary passes the manifest of 0.2.0 (sizes, no digests);
    its ids do not."""
    from fairseq.data import Dictionary

    from segatron_fairseq.data import SegmentIndexedDataset
    from segatron_fairseq.tasks.cross_thought_mlm import CrossThoughtMLMConfig, CrossThoughtMLMTask
    from segatron_fairseq.tasks.segatron_lm import SegatronLMConfig, SegatronLMTask

    size = len(Dictionary.load(str(dest / "dict.txt")))
    ids = np.fromfile(dest / "train.bin", dtype=np.uint16)
    ids[len(ids) // 2] = size + 7
    ids.tofile(dest / "train.bin")
    _as_written_by("0.2.0", dest, "train")
    message = f"{dest / 'train.bin'}: token id {size + 7:,} is outside the dictionary of {size:,} symbols"
    with pytest.raises(ValueError, match=message):
        SegmentIndexedDataset(str(dest / "train"))
    SegmentIndexedDataset(str(dest / "train"), size + 8)  # a task's dictionary with symbols of its own
    task = SegatronLMTask.setup_task(SegatronLMConfig(data=str(dest), batch_size=2, batch_size_valid=2,
                                                      train_subset="train", seed=1))
    with pytest.raises(ValueError, match=message):
        task.load_dataset("train")
    task = CrossThoughtMLMTask.setup_task(CrossThoughtMLMConfig(data=str(dest), num_sequences=2, sequence_length=8))
    with pytest.raises(ValueError, match=f"token id {size + 7:,} is outside the dictionary of {size + 1:,}"):
        task.load_dataset("train")  # its dictionary has <mask>
    out = run_cli("segatron-inspect", dest, "train", 0, expect_ok=False)
    assert out.strip().splitlines() == [f"segatron-inspect: error: {message}: the split was binarized with another "
                                        f"dictionary; run segatron-preprocess again"]


def test_whole_word_masking_needs_the_metadata(dest):
    from segatron_fairseq.tasks.masking import load_dictionary_with_mask, whole_word_starts

    dictionary = load_dictionary_with_mask(str(dest))
    assert whole_word_starts(str(dest), dictionary).all()
    (dest / "segatron_preprocess.json").unlink()
    with pytest.raises(ValueError, match="segatron_preprocess.json is missing"):
        whole_word_starts(str(dest), dictionary)


# ---- the authors' stream -----------------------------------------------------------------------------

def test_authors_stream_style(corpus, tmp_path):
    from segatron_fairseq.data import SegmentIndexedDataset

    dest = tmp_path / "authors"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", corpus / "train.txt",
            "--validpref", corpus / "valid.txt", "--destdir", dest, "--stream-style", "authors", "--workers", 2,
            "--chunk-bytes", 3000, "--sentence-splitter", corpus / "bin" / "punkt_tab")
    ours = SegmentIndexedDataset(str(dest / "train"))
    fairseq_style = SegmentIndexedDataset(str(corpus / "bin" / "train"))
    text_lines = [line for line in (corpus / "train.txt").read_text().splitlines() if line.strip()]
    assert len(ours) == len(text_lines) < len(fairseq_style)  # blank lines are not items
    assert ours.sizes.min() > 1
    paragraph = ours.index_array("paragraph")
    assert paragraph.dtype == np.uint32
    first = np.cumsum(ours.sizes) - ours.sizes
    assert paragraph[first].tolist() == list(range(len(ours)))  # never reset, across chunks and documents
    assert json.loads((dest / "segatron_preprocess.json").read_text())["stream_style"] == "authors"
    # the authors' setup end to end: their stream and their window_end distances
    out = fairseq_train(dest, task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                        save_dir=tmp_path / "ckpt", extra=["--segment-distance-origin", "window_end", "--batch-size", 2,
                                                       "--tgt-len", 16, "--max-update", 2, "--no-save",
                                                       "--log-format", "simple"])
    assert "done training" in out and "'segment_distance_origin': window_end" in out
    refused("--input-format", "wikitext", "--testpref", corpus / "valid.txt", "--destdir", dest,
            expect="was binarized with --stream-style authors, this run asks for --stream-style fairseq")


def test_authors_stream_splits_headings_like_text(tmp_path):
    (tmp_path / "t.txt").write_text(" = Tom Sawyer . The novel = \n \n The story is long . It ends well . \n")
    out = {}
    for style in ("fairseq", "authors"):
        run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "t.txt",
                "--destdir", tmp_path / style, "--stream-style", style, "--sentence-splitter", "punkt-trained")
        from segatron_fairseq.data import SegmentIndexedDataset

        dataset = SegmentIndexedDataset(str(tmp_path / style / "train"))
        out[style] = [dataset[i].sentence.tolist() for i in range(len(dataset))]
    assert out["fairseq"][0] == [0] * 8 and len(out["fairseq"]) == 3  # the title is one sentence; a blank item
    assert out["authors"][0] == [0] * 4 + [1] * 4  # split like text, and no blank items


def test_a_signal_during_the_commit_waits_for_it():
    from segatron_preprocess.staging import Interrupted, check_interrupted, interruptible, uninterrupted

    finished = []
    with interruptible():
        with uninterrupted():
            os.kill(os.getpid(), signal.SIGTERM)
            finished.append("commit")
        finished.append("after")
        check_interrupted()  # the commit's signal is not the run's
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(Interrupted):
            check_interrupted()
    assert finished == ["commit", "after"]


def _a_pool_worker_signalled_before_its_setup(signum):
    from segatron_preprocess.staging import worker_process_setup

    os.kill(os.getpid(), signum)  # the pool's terminate, or a Ctrl-C to the process group, before the setup
    time.sleep(0.2)
    worker_process_setup()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_pool_worker_signalled_before_its_setup(signum):
    """A signal that reaches a worker before its setup does what it does after: SIGTERM (the pool's terminate) ends
    it at once; SIGINT (a Ctrl-C reaches the whole process group) is left to the run's process, and the worker goes
    on (a KeyboardInterrupt would end it with exit status 1 and a traceback)."""
    from segatron_preprocess.jobs import pool_context
    from segatron_preprocess.staging import interruptible

    with interruptible():  # the run's handlers, which note signals
        worker = pool_context().Process(target=_a_pool_worker_signalled_before_its_setup, args=(signum,))
        worker.start()
        worker.join(30)
    exitcode = worker.exitcode
    worker.kill()
    assert exitcode == (-signal.SIGTERM if signum == signal.SIGTERM else 0)


@pytest.mark.parametrize("where", ["cli.get_parser", "pipeline.check_run"])
def test_ctrl_c_before_the_run_handles_signals(corpus, tmp_path, monkeypatch, where):
    """SIGINT (KeyboardInterrupt) while the parser's modules are imported or the inputs are checked."""
    import importlib

    def interrupted(*args):
        raise KeyboardInterrupt

    module, name = where.split(".")
    monkeypatch.setattr(importlib.import_module(f"segatron_preprocess.{module}"), name, interrupted)
    refusal = run_cli_refused("segatron-preprocess", "--input-format", "wikitext", "--trainpref",
                              corpus / "train.txt", "--destdir", tmp_path / "bin")
    assert refusal.code == 130
    assert refusal.stderr.splitlines() == ["segatron-preprocess: stopped by SIGINT"], refusal.output
    assert not (tmp_path / "bin").exists()


class _SwallowsSignals:
    """Like the regex module's object that once swallowed a SIGTERM: the signal arrives while its ``__del__`` runs,
    and Python ignores (prints) whatever a ``__del__`` raises."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)  # the handler runs here, inside __del__


def test_a_signal_that_lands_in_code_that_swallows_exceptions_still_stops_the_run(corpus, tmp_path, monkeypatch):
    from segatron_preprocess import indexer

    start_document, calls = indexer.DocumentIndexer.start_document, []

    def start_document_with_a_del(self):
        calls.append(1)
        if len(calls) == 3:
            _SwallowsSignals()  # made and collected at once
        return start_document(self)

    monkeypatch.setattr(indexer.DocumentIndexer, "start_document", start_document_with_a_del)
    dest = tmp_path / "dest"
    out = run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", corpus / "train.txt",
                  "--destdir", dest, "--sentence-splitter", corpus / "bin" / "punkt_tab", expect_ok=False)
    assert f"segatron-preprocess: stopped by SIGTERM: workers ended, temporary files removed, {dest} left as it " \
           f"was" in out, out[-3000:]
    assert "wrote train" not in out
    assert not dest.exists()


# ---- one run at a time into a destination ---------------------------------------------------------------

@pytest.mark.end_to_end
def test_a_destination_another_process_holds_is_refused(corpus, dest):
    """The test process holds the destination's lock; a segatron-preprocess process is refused at once."""
    from segatron_preprocess.staging import LOCK_FILE, locked_destination

    before = snapshot(dest)
    with locked_destination(str(dest)):
        proc = subprocess.run([str(BIN / "segatron-preprocess"), "--input-format", "wikitext", "--testpref",
                               str(corpus / "valid.txt"), "--destdir", str(dest)], capture_output=True,
                              text=True, timeout=120)
        assert (dest / LOCK_FILE).read_text() == f"process {os.getpid()} on {socket.gethostname()}"
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"segatron-preprocess: error: {dest}: another segatron-preprocess run (process {os.getpid()} on "
        f"{socket.gethostname()}) is writing this destination; wait for it to end, or use another --destdir"]
    assert snapshot(dest) == before  # the lock file removed again


@pytest.mark.end_to_end
def test_two_runs_into_one_new_destination(long_input, corpus, tmp_path):
    """The second run is refused while the first writes; the first finishes with every split complete."""
    dest = tmp_path / "dest"
    first, _ = _start_long_run(long_input, corpus, dest)
    second = subprocess.run([str(BIN / "segatron-preprocess"), "--input-format", "wikitext", "--trainpref",
                             str(corpus / "train.txt"), "--destdir", str(dest)], capture_output=True, text=True,
                            timeout=120)
    assert first.poll() is None, "the first run ended before the second started"
    assert second.returncode == 1
    assert second.stderr.strip().splitlines() == [
        f"segatron-preprocess: error: {dest}: another segatron-preprocess run (process {first.pid} on "
        f"{socket.gethostname()}) is writing this destination; wait for it to end, or use another --destdir"]
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-3000:]
    metadata = json.loads((dest / "segatron_preprocess.json").read_text())
    assert metadata["splits"]["train"]["state"] == "complete"
    assert not [p.name for p in dest.iterdir() if p.name.startswith(".segatron-preprocess")]


