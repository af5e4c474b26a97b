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
