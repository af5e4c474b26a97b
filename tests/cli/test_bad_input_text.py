"""``segatron-preprocess`` against hostile and careless text input (the sibling of ``test_bad_input.py``): streams
given as input files, JSON nested too deeply to read, and a disk that fills up while the run writes. Each ends with
one line ``segatron-preprocess: error: ...`` naming the file, a non-zero exit, no traceback, and the test's folder as
it was (a destination the run created is gone again).

A case builds its arguments from these paths: ``{notes}`` (plain text), ``{fifo}`` (a FIFO no one writes), ``{pipe}``
(what ``<(cat notes.txt)`` passes: ``/dev/fd/N``, the read end of a pipe), ``{deep_first}`` / ``{deep_later}`` (JSON
lines whose first / second line nests 100,000 lists), ``{out}`` (a destination in the folder).
"""
import errno
import os
from dataclasses import dataclass

import pytest
from cli_errors import assert_refused, assert_user_error, listing
from conftest import run_cli, run_cli_refused
from fairseq.data import Dictionary, indexed_dataset

from segatron_preprocess import binarize, inputs, sentences

PROG = "segatron-preprocess"
DEEP = '{"text": "A b .", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"


@dataclass(frozen=True)
class Case:
    """``segatron-preprocess args...`` must fail with one error line containing ``says`` (both formatted with the
    paths)."""

    args: str
    says: str


CASES = {
    "trainpref-fifo": Case("--trainpref {fifo} --destdir {out}",
                           "{fifo}: input file for split 'train' is a FIFO or pipe, not a regular file"),
    "trainpref-process-substitution": Case("--trainpref {pipe} --destdir {out}",
                                           "{pipe}: input file for split 'train' is a FIFO or pipe"),
    "validpref-fifo": Case("--trainpref {notes} --validpref {fifo} --destdir {out}",
                           "{fifo}: input file for split 'valid' is a FIFO or pipe"),
    "srcdict-process-substitution": Case("--trainpref {notes} --srcdict {pipe} --destdir {out}",
                                         "{pipe}: the dictionary is a FIFO or pipe, not a regular file"),
    "bpe-model-fifo": Case("--trainpref {notes} --bpe sentencepiece --bpe-model {fifo} --destdir {out}",
                           "{fifo}: --bpe-model is a FIFO or pipe, not a regular file"),
    "bpe-vocab-process-substitution": Case("--trainpref {notes} --bpe wordpiece --bpe-vocab {pipe} --destdir {out}",
                                           "{pipe}: --bpe-vocab is a FIFO or pipe, not a regular file"),
    "sentence-splitter-fifo": Case("--trainpref {notes} --sentence-splitter {fifo} --destdir {out}",
                                   "{fifo}: not a Punkt model (a punkt_tab directory or a punkt.json file)"),
    "jsonl-first-line-nested-too-deeply": Case("--input-format jsonl --trainpref {deep_first} --destdir {out}",
                                               "{deep_first}: line 1 nests its JSON deeper than Python's json"),
    "jsonl-later-line-nested-too-deeply": Case("--input-format jsonl --trainpref {deep_later} --destdir {out}",
                                               "{deep_later}: line 2 nests its JSON deeper than Python's json"),
}


@pytest.fixture
def paths(tmp_path):
    """The folder's inputs (see the module doc); the pipe is closed after the test."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("Some notes . More notes .\n")
    os.mkfifo(folder / "fifo")
    (folder / "deep_first.jsonl").write_text(DEEP + "\n")
    (folder / "deep_later.jsonl").write_text('{"text": "A b ."}\n' + DEEP + "\n")
    read_end, write_end = os.pipe()
    os.write(write_end, b"Some notes .\n")
    os.close(write_end)
    yield {"here": folder, "notes": folder / "notes.txt", "fifo": folder / "fifo", "pipe": f"/dev/fd/{read_end}",
           "deep_first": folder / "deep_first.jsonl", "deep_later": folder / "deep_later.jsonl", "out": folder / "out"}
    os.close(read_end)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_mistake_ends_in_one_line_naming_it(case, paths):
    before = listing(paths["here"])
    refusal = run_cli_refused(PROG, *case.args.format(**paths).split(), cwd=paths["here"])
    assert_refused(refusal, PROG, case.says.format(**paths))
    assert listing(paths["here"]) == before, "the folder changed"


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# what the run writes when the disk is full: (object, its writing function, what the error line says is written)
WRITERS = {
    "punkt": (sentences, "save", "the sentence splitter"),
    "dictionary": (Dictionary, "save", "dict.txt"),
    "split": (indexed_dataset.MMapIndexedDatasetBuilder, "add_item", "the train split"),
    "merged-split": (indexed_dataset.MMapIndexedDatasetBuilder, "merge_file_", "the train split"),
}


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_a_full_disk_ends_in_one_line_and_writes_nothing(writer, paths, monkeypatch):
    owner, function, what = writer
    before = listing(paths["here"])
    monkeypatch.setattr(owner, function, _full_disk)
    refusal = run_cli_refused(PROG, "--trainpref", paths["notes"], "--destdir", paths["out"])
    assert_refused(refusal, PROG, f"{paths['out']}: cannot write {what} (No space left on device); "
                                 f"{paths['out']} left as it was")
    assert listing(paths["here"]) == before, "the folder changed"


def test_a_full_disk_leaves_an_existing_destination_as_it_was(paths, monkeypatch):
    """Everything in it as it was (the directory itself is modified: the run's lock file came and went)."""
    run_cli(PROG, "--trainpref", paths["notes"], "--destdir", paths["out"])
    before = listing(paths["out"])
    monkeypatch.setattr(indexed_dataset.MMapIndexedDatasetBuilder, "add_item", _full_disk)
    refusal = run_cli_refused(PROG, "--validpref", paths["notes"], "--destdir", paths["out"])
    assert_user_error(refusal.stderr, PROG, f"{paths['out']}: cannot write the valid split (No space left")
    assert listing(paths["out"]) == before, "the destination's files changed"


def test_an_input_this_user_cannot_read_is_named(paths, monkeypatch):
    """(Tests run as root, who reads every file: the check's ``open`` is refused instead.)"""
    def refused(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    monkeypatch.setattr(inputs, "open", refused, raising=False)
    refusal = run_cli_refused(PROG, "--trainpref", paths["notes"], "--destdir", paths["out"])
    assert_user_error(refusal.stderr, PROG, f"{paths['notes']}: cannot read it (Permission denied)")


def test_an_input_that_goes_away_midway_is_named(paths, monkeypatch):
    def vanished(path, *args):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)

    before = listing(paths["here"])
    monkeypatch.setattr(binarize, "binarize_range", vanished)
    refusal = run_cli_refused(PROG, "--trainpref", paths["notes"], "--destdir", paths["out"])
    assert_user_error(refusal.stderr, PROG, f"{paths['notes']}: cannot read it (No such file or directory); "
                                            f"{paths['out']} left as it was")
    assert listing(paths["here"]) == before, "the folder changed"


def test_a_destdir_named_with_a_line_break_is_written(paths):
    """NLTK's data paths refuse such a name; the splitter is saved and reused without them."""
    destination = paths["here"] / "new\nline"
    run_cli(PROG, "--trainpref", paths["notes"], "--destdir", destination)
    run_cli(PROG, "--validpref", paths["notes"], "--destdir", destination)
    assert {"train.bin", "valid.bin", "punkt_tab"} <= set(os.listdir(destination))
