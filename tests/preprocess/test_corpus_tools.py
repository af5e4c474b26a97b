"""The corpus tools, in-process: segatron-split-wikitext cuts a WikiText file at article starts, and the demo
corpus is WikiText the binarizer reads document by document."""
import json

from conftest import run_cli
from corpus import make_documents, write_wikitext


def test_split_wikitext_keeps_whole_articles_in_order(tmp_path):
    write_wikitext(tmp_path / "wiki.tokens", make_documents(12, seed=71))
    out = run_cli("segatron-split-wikitext", tmp_path / "wiki.tokens", tmp_path / "split", "--valid-articles", 2,
                  "--test-articles", 3)
    parts = {split: (tmp_path / "split" / f"wiki.{split}.tokens").read_text() for split in ("train", "valid", "test")}
    assert "".join(parts.values()) == (tmp_path / "wiki.tokens").read_text()  # nothing lost, nothing moved
    titles = {split: [line for line in text.splitlines() if line.startswith(" = ") and not line.startswith(" = = ")]
              for split, text in parts.items()}
    assert [len(t) for t in titles.values()] == [7, 2, 3]
    assert titles["test"] == [" = Lobster 9 = ", " = Lobster 10 = ", " = Lobster 11 = "]
    assert all(text.startswith(" \n = Lobster ") for text in parts.values())  # each split starts an article
    assert "train: 7 articles" in out and "test: 3 articles" in out
    out = run_cli("segatron-split-wikitext", tmp_path / "wiki.tokens", tmp_path / "few", "--valid-articles", 6,
                  "--test-articles", 6, expect_ok=False)
    assert "wiki.tokens has 12 articles; need more than 12" in out


def test_demo_corpus_is_deterministic_wikitext_the_binarizer_reads(tmp_path):
    from segatron_preprocess.demo_corpus import write_demo_corpus

    write_demo_corpus(str(tmp_path / "a"), train_documents=20, seed=3)
    write_demo_corpus(str(tmp_path / "b"), train_documents=20, seed=3)
    write_demo_corpus(str(tmp_path / "c"), train_documents=20, seed=4)
    names = ["wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"]
    assert all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names)
    assert (tmp_path / "a" / names[0]).read_bytes() != (tmp_path / "c" / names[0]).read_bytes()
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "a" / names[0],
            "--validpref", tmp_path / "a" / names[1], "--testpref", tmp_path / "a" / names[2],
            "--destdir", tmp_path / "bin")
    splits = json.loads((tmp_path / "bin" / "segatron_preprocess.json").read_text())["splits"]
    assert [splits[s]["documents"] for s in ("train", "valid", "test")] == [20, 2, 2]
    assert splits["train"]["paragraphs"] > 20 and splits["train"]["sentences"] > splits["train"]["paragraphs"]


def test_split_wikitext_refuses_mistakes_and_writes_nothing(tmp_path):
    wiki = tmp_path / "wiki.tokens"
    write_wikitext(wiki, make_documents(6, seed=72))
    out_dir = tmp_path / "split"

    def refused(*args, expect):
        out = run_cli("segatron-split-wikitext", *args, expect_ok=False)
        assert f"segatron-split-wikitext: error: {expect}" in out, out
        assert "Traceback" not in out
        assert not out_dir.exists()

    # counts that overlapped train and test (-1) or wrote empty files (0)
    refused(wiki, out_dir, "--valid-articles", -1, expect="--valid-articles must be >= 1, not -1")
    refused(wiki, out_dir, "--valid-articles", 0, "--test-articles", 0, expect="--valid-articles must be >= 1, not 0")
    refused(wiki, out_dir, "--test-articles", 0, expect="--test-articles must be >= 1, not 0")
    refused(tmp_path / "nope.tokens", out_dir, expect=f"{tmp_path / 'nope.tokens'}: the WikiText file does not exist")
    refused(tmp_path, out_dir, expect=f"{tmp_path}: the WikiText file is a directory, not a file")
    (tmp_path / "latin1.tokens").write_bytes(wiki.read_bytes() + b" caf\xe9 \n")
    line = wiki.read_text().count("\n") + 1
    refused(tmp_path / "latin1.tokens", out_dir, expect=f"{tmp_path / 'latin1.tokens'}: line {line} is not valid UTF-8")
    (tmp_path / "a_file").write_text("mine\n")
    out = run_cli("segatron-split-wikitext", wiki, tmp_path / "a_file", expect_ok=False)
    assert f"error: {tmp_path / 'a_file'}: the output directory is a file" in out
    assert (tmp_path / "a_file").read_text() == "mine\n"

    # existing outputs are replaced only with --overwrite
    out_dir.mkdir()
    (out_dir / "wiki.valid.tokens").write_text("mine\n")
    out = run_cli("segatron-split-wikitext", wiki, out_dir, "--valid-articles", 1, "--test-articles", 1,
                  expect_ok=False)
    assert f"error: {out_dir / 'wiki.valid.tokens'} exists; pass --overwrite" in out
    assert sorted(p.name for p in out_dir.iterdir()) == ["wiki.valid.tokens"]
    run_cli("segatron-split-wikitext", wiki, out_dir, "--valid-articles", 1, "--test-articles", 1, "--overwrite")
    assert (out_dir / "wiki.valid.tokens").read_text().startswith(" \n = Lobster 4 = ")


def test_split_wikitext_never_overwrites_its_input(tmp_path):
    write_wikitext(tmp_path / "wiki.train.tokens", make_documents(6, seed=72))
    before = (tmp_path / "wiki.train.tokens").read_bytes()
    out = run_cli("segatron-split-wikitext", tmp_path / "wiki.train.tokens", tmp_path, "--overwrite",
                  "--valid-articles", 1, "--test-articles", 1, expect_ok=False)
    assert f"error: {tmp_path / 'wiki.train.tokens'}: the input is one of the outputs" in out, out
    assert (tmp_path / "wiki.train.tokens").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wiki.train.tokens"]


def test_split_wikitext_replaces_all_three_files_or_none(tmp_path, monkeypatch):
    import os

    write_wikitext(tmp_path / "wiki.tokens", make_documents(6, seed=72))
    out_dir = tmp_path / "split"
    run_cli("segatron-split-wikitext", tmp_path / "wiki.tokens", out_dir, "--valid-articles", 1, "--test-articles", 1)
    old = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    replace = os.replace

    def test_split_unwritable(source, target):  # as wiki.test.tokens with chattr +i: neither replaced nor moved
        if str(out_dir / "wiki.test.tokens") in (str(source), str(target)):
            raise PermissionError(1, "Operation not permitted", str(out_dir / "wiki.test.tokens"))
        replace(source, target)

    monkeypatch.setattr(os, "replace", test_split_unwritable)
    out = run_cli("segatron-split-wikitext", tmp_path / "wiki.tokens", out_dir, "--valid-articles", 2,
                  "--test-articles", 2, "--overwrite", expect_ok=False)
    assert f"segatron-split-wikitext: error: {out_dir / 'wiki.test.tokens'}: Operation not permitted" in out, out
    assert "Traceback" not in out
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == old  # train and valid were put back
