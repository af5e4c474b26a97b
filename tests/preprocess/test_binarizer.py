"""segatron-preprocess: fairseq equality, index semantics, alignment, formats, bad input."""
import json
import os
import subprocess

import pytest
import sentencepiece as spm
from conftest import BIN, run_cli
from corpus import make_documents, write_jsonl, write_lines, write_wikitext
from fairseq.data import Dictionary, data_utils

from segatron_fairseq.data import SegmentIndexedDataset

DATASET_FILES = [f"{split}{suffix}.{ext}" for split in ("train", "valid")
                 for suffix in ("", ".paragraph", ".sentence", ".token") for ext in ("bin", "idx")]


def expected_wikitext_items(documents, empty_paragraph_in=-1):
    """(tokens, paragraph, sentence, token) lists per item, from the generator's
    structure and the documented rules: a reference independent of the indexer."""
    items = []
    state = None  # (paragraph, sentence, next token) of the current document
    for d, doc in enumerate(documents):
        # the blank line before a title continues the previous document
        state = state or (0, 0, 0)
        items.append((["</s>"], [state[0]], [state[1]], [state[2]]))
        state = (state[0], state[1], state[2] + 1)
        for k, (_, sentences) in enumerate(doc):
            tokens, par, sen, tok = [], [], [], []
            for s, words in enumerate(sentences):
                tokens += words
                par += [k] * len(words)
                sen += [s] * len(words)
                tok += list(range(len(words)))
            last = len(sentences) - 1
            items.append((tokens + ["</s>"], par + [k], sen + [last], tok + [len(sentences[-1])]))
            state = (k, last, len(sentences[-1]) + 1)
            for _ in range(2 if (d == empty_paragraph_in and k == 1) else 1):
                items.append((["</s>"], [k], [last], [state[2]]))
                state = (k, last, state[2] + 1)
    return items


@pytest.fixture(scope="module")
def wikitext(tmp_path_factory):
    """A WikiText corpus binarized by both tools, with the same dictionary."""
    tmp = tmp_path_factory.mktemp("wikitext")
    train_docs = make_documents(40, seed=1, long_paragraph=True)
    valid_docs = make_documents(6, seed=2)
    write_wikitext(tmp / "train.txt", train_docs, empty_paragraph_in=3)
    write_wikitext(tmp / "valid.txt", valid_docs)
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", tmp / "train.txt", "--validpref",
            tmp / "valid.txt", "--destdir", tmp / "fairseq", "--workers", 2)
    out = run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "train.txt",
                  "--validpref", tmp / "valid.txt", "--destdir", tmp / "ours", "--workers", 2,
                  "--chunk-bytes", 2000)
    return tmp, train_docs, valid_docs, out


def test_tokens_and_dictionary_equal_fairseq_preprocess(wikitext):
    tmp, *_ = wikitext
    for name in ["dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx"]:
        assert (tmp / "ours" / name).read_bytes() == (tmp / "fairseq" / name).read_bytes(), name
    # and fairseq's own loader reads it
    dictionary = Dictionary.load(str(tmp / "ours" / "dict.txt"))
    dataset = data_utils.load_indexed_dataset(str(tmp / "ours" / "train"), dictionary)
    assert len(dataset) == len(SegmentIndexedDataset(str(tmp / "ours" / "train")))


def test_given_srcdict_tokens_equal_fairseq(wikitext, tmp_path):
    tmp, *_ = wikitext
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--validpref", tmp / "valid.txt",
            "--srcdict", tmp / "fairseq" / "dict.txt", "--destdir", tmp_path,
            "--sentence-splitter", tmp / "ours" / "punkt_tab")
    for name in ["valid.bin", "valid.idx"]:
        assert (tmp_path / name).read_bytes() == (tmp / "fairseq" / name).read_bytes()


@pytest.mark.parametrize("split", ["train", "valid"])
def test_index_semantics_match_the_documents(wikitext, split):
    tmp, train_docs, valid_docs, _ = wikitext
    documents = train_docs if split == "train" else valid_docs
    expected = expected_wikitext_items(documents, empty_paragraph_in=3 if split == "train" else -1)
    dictionary = Dictionary.load(str(tmp / "ours" / "dict.txt"))
    dataset = SegmentIndexedDataset(str(tmp / "ours" / split))
    assert len(dataset) == len(expected)
    for i, (tokens, paragraph, sentence, token) in enumerate(expected):
        item = dataset[i]
        assert [dictionary[t] for t in item.tokens] == tokens, i
        assert item.paragraph.tolist() == paragraph, i
        assert item.sentence.tolist() == sentence, (i, " ".join(tokens))
        assert item.token.tolist() == token, i


def test_abbreviations_do_not_end_sentences(wikitext):
    tmp, *_ = wikitext
    dictionary = Dictionary.load(str(tmp / "ours" / "dict.txt"))
    dataset = SegmentIndexedDataset(str(tmp / "ours" / "train"))
    seen = set()
    for i in range(len(dataset)):
        item = dataset[i]
        words = [dictionary[t] for t in item.tokens]
        for position, word in enumerate(words[:-1]):
            if word in ("H.", "U.S."):
                seen.add(word)
                assert item.token[position + 1] == item.token[position] + 1, (word, " ".join(words))
    assert seen == {"H.", "U.S."}


def test_document_starts_and_summary(wikitext):
    tmp, train_docs, _, out = wikitext
    dataset = SegmentIndexedDataset(str(tmp / "ours" / "train"))
    # item 0 is the blank line before the first title; then one start per title
    titles = [0] + [i for i in range(len(dataset)) if dataset.sizes[i] > 1 and dataset[i].paragraph[0] == 0]
    assert dataset.document_starts().tolist() == titles
    assert len(titles) == len(train_docs) + 1
    summary = json.loads((tmp / "ours" / "segatron_preprocess.json").read_text())["splits"]["train"]
    assert summary["documents"] == len(train_docs)
    assert summary["paragraphs"] == sum(len(doc) for doc in train_docs)
    assert summary["sentences"] == sum(len(s) for doc in train_docs for _, s in doc)
    assert summary["longest_sentence"] == max(len(s) for doc in train_docs for _, ss in doc for s in ss)
    assert summary["tokens"] == int(dataset.sizes.sum())
    assert f"{len(train_docs)} documents" in out and "longest paragraph" in out


def test_one_worker_and_two_workers_write_the_same(wikitext, tmp_path):
    tmp, *_ = wikitext
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "train.txt",
            "--validpref", tmp / "valid.txt", "--destdir", tmp_path, "--workers", 1,
            "--sentence-splitter", tmp / "ours" / "punkt_tab")
    for name in DATASET_FILES:
        assert (tmp_path / name).read_bytes() == (tmp / "ours" / name).read_bytes(), name


def test_workers_run_in_separate_processes(tmp_path):
    from segatron_preprocess.jobs import Job, run_jobs

    jobs = [Job("x", "lines", i, i + 1, None) for i in range(4)]
    pids = set(pid for pid in run_jobs(jobs, _report_pid, 2, "test"))
    assert len(pids) == 2 and os.getpid() not in pids


def _report_pid(job):
    import time

    time.sleep(0.2)
    return job, os.getpid()


def _threads(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def _report_parent(job):
    return job, (os.getppid(), _threads(os.getppid()))


def test_workers_are_forked_by_a_single_threaded_forkserver_not_by_this_process(monkeypatch):
    """A fork of a process with threads can deadlock in the child (Python 3.12+ warns). The run's process has
    threads (the test starts one, as the progress bar and torch do); its pool's workers come from the
    forkserver, which has none, and this process never calls fork(), whatever the Python."""
    import threading

    from segatron_preprocess import jobs

    fork, forks = os.fork, []
    monkeypatch.setattr(os, "fork", lambda: forks.append(os.getpid()) or fork())
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        parents = set(jobs.run_jobs([jobs.Job("x", "lines", i, i + 1, None) for i in range(4)], _report_parent, 2,
                                    "test"))
    finally:
        stop.set()
        thread.join()
    assert forks == []
    assert [threads for _, threads in parents] == [1] and os.getpid() not in {pid for pid, _ in parents}
    assert jobs.pool_context().get_start_method() == "forkserver"


FORKS_WITH_THREADS = """
import os, sys, threading
from segatron_preprocess.cli import cli_main

def threads():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])

def fork():  # what Python 3.12+ warns about, on any Python
    if threads() > 1:
        print(f"fork() in a process of {threads()} threads", file=sys.stderr)
    return real_fork()

if __name__ == "__main__":  # the workers import this module too
    real_fork, os.fork = os.fork, fork
    stop = threading.Event()
    threading.Thread(target=stop.wait).start()
    try:
        cli_main(sys.argv[1:])
    finally:
        stop.set()
"""


@pytest.mark.end_to_end
def test_a_run_with_workers_and_threads_gives_no_fork_warning(wikitext, tmp_path):
    """Python 3.12+ warns ``This process ... is multi-threaded, use of fork() may lead to deadlocks in the child``
    when a process with threads forks, once per fork (a DeprecationWarning, printed here with -W always; -W error
    does not turn it into an error). A run with workers, from a process with a second thread, prints none, nor does
    its forkserver (which gets the same -W)."""
    tmp, *_ = wikitext
    (tmp_path / "run.py").write_text(FORKS_WITH_THREADS)
    warnings = "always:This process:DeprecationWarning"  # the start of Python's fork warning
    proc = subprocess.run([str(BIN / "python"), "-W", warnings, str(tmp_path / "run.py"), "--input-format", "wikitext",
                           "--trainpref", str(tmp / "train.txt"), "--destdir", str(tmp_path / "bin"), "--workers", "2",
                           "--chunk-bytes", "2000", "--sentence-splitter", str(tmp / "ours" / "punkt_tab")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fork()" not in proc.stderr, proc.stderr[-3000:]
    for name in DATASET_FILES[:8]:
        assert (tmp_path / "bin" / name).read_bytes() == (tmp / "ours" / name).read_bytes(), name


def _punkt_params(path):
    from segatron_preprocess import sentences

    params = sentences.load(str(path))._params
    return (params.abbrev_types, params.collocations, params.sent_starters, dict(params.ortho_context))


def test_punkt_model_is_saved_and_reused(wikitext, tmp_path):
    tmp, *_ = wikitext
    dest = tmp_path / "bin"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "train.txt",
            "--destdir", dest, "--sentence-splitter", "punkt-trained")
    assert _punkt_params(dest / "punkt_tab") == _punkt_params(tmp / "ours" / "punkt_tab")
    assert sorted(os.listdir(dest / "punkt_tab")) == ["abbrev_types.txt", "collocations.tab", "ortho_context.tab",
                                                     "sent_starters.txt"]  # NLTK's punkt_tab format
    out = run_cli("segatron-preprocess", "--input-format", "wikitext", "--validpref", tmp / "valid.txt",
                  "--destdir", dest)
    assert "reused" in out
    assert (dest / "valid.sentence.bin").read_bytes() == (tmp / "ours" / "valid.sentence.bin").read_bytes()


def test_lines_and_jsonl_formats_agree(tmp_path):
    documents = make_documents(12, seed=5)
    write_lines(tmp_path / "c.txt", documents)
    write_jsonl(tmp_path / "c.jsonl", documents)
    for fmt, name in (("lines", "c.txt"), ("jsonl", "c.jsonl")):
        run_cli("segatron-preprocess", "--input-format", fmt, "--trainpref", tmp_path / name,
                "--destdir", tmp_path / fmt, "--workers", 2, "--chunk-bytes", 500)
    for suffix in ("", ".paragraph", ".sentence", ".token"):
        for ext in ("bin", "idx"):
            name = f"train{suffix}.{ext}"
            assert (tmp_path / "lines" / name).read_bytes() == (tmp_path / "jsonl" / name).read_bytes(), name
    dataset = SegmentIndexedDataset(str(tmp_path / "lines" / "train"))
    assert len(dataset) == sum(len(doc) for doc in documents)  # no blank items in these formats
    assert len(dataset.document_starts()) == len(documents)


def test_sentencepiece_token_indexes_count_subwords(tmp_path):
    documents = make_documents(60, seed=7)
    write_lines(tmp_path / "train.txt", documents)
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "train.txt",
            "--destdir", tmp_path / "bin", "--bpe", "sentencepiece", "--bpe-vocab-size", 120)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "bin" / "sentencepiece.model"))
    dictionary = Dictionary.load(str(tmp_path / "bin" / "dict.txt"))
    dataset = SegmentIndexedDataset(str(tmp_path / "bin" / "train"))
    paragraphs = [(s) for doc in documents for _, s in doc]
    assert len(dataset) == len(paragraphs)
    for i, sentences in enumerate(paragraphs):
        item = dataset[i]
        pieces = [dictionary[t] for t in item.tokens[:-1]]
        for number, words in enumerate(sentences):
            mine = [p for p, s in zip(pieces, item.sentence[:-1].tolist()) if s == number]
            assert sp.decode(mine) == " ".join(words)
            positions = (item.sentence[:-1] == number).nonzero().flatten()
            assert item.token[positions].tolist() == list(range(len(positions)))
        assert item.token[-1] == len(mine) and item.sentence[-1] == len(sentences) - 1

    # an existing model through --bpe-model gives the same datasets, and is kept next to them
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "train.txt",
            "--destdir", tmp_path / "again", "--bpe", "sentencepiece", "--bpe-model",
            tmp_path / "bin" / "sentencepiece.model", "--sentence-splitter", tmp_path / "bin" / "punkt_tab")
    for name in ("dict.txt", "train.bin", "train.token.bin", "train.sentence.bin", "sentencepiece.model"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "bin" / name).read_bytes(), name


def test_pretrained_punkt_is_used_when_installed_and_refused_clearly_when_not(tmp_path):
    from segatron_preprocess import sentences

    write_lines(tmp_path / "train.txt", make_documents(3, seed=1))
    args = ["--input-format", "lines", "--trainpref", tmp_path / "train.txt", "--destdir", tmp_path / "bin",
            "--sentence-splitter", "punkt-pretrained"]
    if sentences.pretrained_available():
        assert "punkt-pretrained (NLTK english)" in run_cli("segatron-preprocess", *args)
    else:
        out = _preprocess_error(*args)
        assert "NLTK's English Punkt model (punkt_tab) is not installed" in out
        assert not (tmp_path / "bin").exists()  # refused before anything was written


# ---- bad input ---------------------------------------------------------------------------------

def _preprocess_error(*args):
    out = run_cli("segatron-preprocess", *args, expect_ok=False)
    return out


def test_missing_and_empty_input(tmp_path):
    out = _preprocess_error("--trainpref", tmp_path / "nope.txt", "--destdir", tmp_path / "bin")
    assert "nope.txt" in out and "does not exist" in out
    (tmp_path / "empty.txt").write_text("")
    out = _preprocess_error("--trainpref", tmp_path / "empty.txt", "--destdir", tmp_path / "bin")
    assert "empty.txt" in out and "is empty" in out


def test_invalid_utf8_names_file_and_line(tmp_path):
    documents = make_documents(5, seed=3)
    write_wikitext(tmp_path / "train.txt", documents)
    lines = (tmp_path / "train.txt").read_bytes().split(b"\n")
    lines[17] = b" caf\xe9 au lait . "
    (tmp_path / "train.txt").write_bytes(b"\n".join(lines))
    out = _preprocess_error("--input-format", "wikitext", "--trainpref", tmp_path / "train.txt",
                            "--destdir", tmp_path / "bin", "--sentence-splitter", "punkt-trained")
    assert "train.txt: line 18 is not valid UTF-8" in out


def test_bad_srcdict_and_different_existing_dictionary(wikitext, tmp_path):
    tmp, *_ = wikitext
    (tmp_path / "bad_dict.txt").write_text("word\nanother 3\n")
    out = _preprocess_error("--input-format", "wikitext", "--validpref", tmp / "valid.txt",
                            "--srcdict", tmp_path / "bad_dict.txt", "--destdir", tmp_path / "bin")
    assert "bad_dict.txt" in out and "not a fairseq dictionary" in out

    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "dict.txt").write_text("alpha 5\nbeta 3\n")
    out = _preprocess_error("--input-format", "wikitext", "--trainpref", tmp / "train.txt", "--destdir", dest,
                            "--sentence-splitter", tmp / "ours" / "punkt_tab")
    assert "holds a different dictionary" in out and str(dest / "dict.txt") in out
    assert sorted(os.listdir(dest)) == ["dict.txt"]  # nothing written next to it


def test_reader_rejects_misaligned_datasets(wikitext, tmp_path):
    tmp, *_ = wikitext
    for name in os.listdir(tmp / "ours"):
        if name.startswith("train"):
            (tmp_path / name).write_bytes((tmp / "ours" / name).read_bytes())
    # the entry of a split of 0.1.0, without a manifest: the files are checked on their own
    (tmp_path / "segatron_preprocess.json").write_text(json.dumps({"splits": {"train": {}}}))
    SegmentIndexedDataset(str(tmp_path / "train"))
    for ext in ("bin", "idx"):
        (tmp_path / f"train.sentence.{ext}").write_bytes((tmp / "ours" / f"valid.sentence.{ext}").read_bytes())
    with pytest.raises(ValueError, match=r"train\.sentence\.idx has \d+ items but .*train\.idx has"):
        SegmentIndexedDataset(str(tmp_path / "train"))
    os.remove(tmp_path / "train.token.idx")
    with pytest.raises(FileNotFoundError, match=r"train\.token\.idx"):
        SegmentIndexedDataset(str(tmp_path / "train"))


def test_inspect_prints_tokens_with_indexes(wikitext):
    tmp, train_docs, *_ = wikitext
    out = run_cli("segatron-inspect", tmp / "ours", "train", 3)
    first_paragraph = train_docs[0][1][1]
    assert f"(1, 0, 0)           {first_paragraph[0][0]}" in out
    if len(first_paragraph) > 1:
        assert f"(1, 1, 0)           {first_paragraph[1][0]}" in out
    out = run_cli("segatron-inspect", tmp / "ours", "train", 10**6, expect_ok=False)
    assert "out of range" in out


@pytest.mark.end_to_end
def test_inspect_ends_quietly_when_its_reader_stops(wikitext):
    """`segatron-inspect ... | head` (scripts/demo.sh, under pipefail): a reader that closes the pipe before the
    item is printed ends segatron-inspect with exit status 0 and nothing on stderr (was a BrokenPipeError)."""
    tmp, *_ = wikitext
    proc = subprocess.Popen([BIN / "segatron-inspect", tmp / "ours", "train", "3"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the program has started: its first write meets a closed pipe
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
