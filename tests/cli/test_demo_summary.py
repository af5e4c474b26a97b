"""The demo's reading of its comparison (``cli/demo_summary.py``) and segatron-compare-lm's results file
(``cli/lm_results.py``), in-process on a stored results.json (tests/data/demo_results.json, the demo's run of
the README): the sentences follow the figures, so swapping two variants' figures swaps the text; a missing or
malformed file is one error line naming it."""
import copy
import json
import math
import shutil
from pathlib import Path

import pytest
from cli_errors import assert_user_error

STORED = Path(__file__).resolve().parents[1] / "data" / "demo_results.json"
FIGURES = ("valid", "test", "test_by_kind")  # what a variant's training gave (its name, size and time stay)


def records_of(path=STORED):
    from segatron_fairseq.cli.demo_summary import demo_records

    return demo_records(str(path))


def swapped(records, a, b):
    """``records`` with the figures of variants ``a`` and ``b`` exchanged."""
    out = copy.deepcopy(records)
    for key in FIGURES:
        out[a][key], out[b][key] = records[b][key], records[a][key]
    return out


def sentences(records, generated_corpus=True):
    from segatron_fairseq.cli.demo_summary import summary_sentences

    return summary_sentences(records, generated_corpus)


def test_the_sentences_read_the_stored_run():
    from segatron_fairseq.cli.demo_summary import DEMO_VARIANTS

    records = records_of()
    best, authors, corpus = sentences(records)
    winner = min(records, key=lambda name: records[name]["test"])
    assert best.startswith(f"Best overall is {DEMO_VARIANTS[winner]}: test perplexity {records[winner]['test']:.2f},")
    for record in records.values():
        assert f"{record['test']:.2f}" in best
    # the share of the authors' distances' gain on sentence-initial tokens, counted here token by token
    base, window_end = records["transformer_xl"]["test_by_kind"], records["segatron_xl_window_end"]["test_by_kind"]
    gain = {kind: base[kind]["tokens"] * (base[kind]["loss"] - window_end[kind]["loss"]) for kind in base}
    initial = gain["paragraph_start"] + gain["sentence_start"]
    assert sum(gain.values()) > 0, "the stored run is one where the authors' distances gain"
    assert f"{initial / sum(gain.values()):.0%} of that gain sits on sentence-initial tokens" in authors
    tokens = sum(kind["tokens"] for kind in base.values())
    assert f"({(base['paragraph_start']['tokens'] + base['sentence_start']['tokens']) / tokens:.0%} of the test" \
        in authors
    assert f"The generated corpus ({tokens:,} test tokens)" in corpus
    initial = math.exp((base["paragraph_start"]["tokens"] * base["paragraph_start"]["loss"]
                        + base["sentence_start"]["tokens"] * base["sentence_start"]["loss"])
                       / (base["paragraph_start"]["tokens"] + base["sentence_start"]["tokens"]))
    assert f"Transformer-XL already predicts with perplexity {initial:.2f} (the other tokens: " \
           f"{math.exp(base['other']['loss']):.2f})" in corpus
    assert f"({records['transformer_xl']['params']:,} parameters, {records['transformer_xl']['updates']:,} updates)" \
        in corpus
    assert "your corpus" in sentences(records, generated_corpus=False)[2]


def test_swapping_two_variants_swaps_what_the_sentences_say():
    from segatron_fairseq.cli.demo_summary import DEMO_VARIANTS

    records = records_of()
    winner = min(records, key=lambda name: records[name]["test"])
    for other in DEMO_VARIANTS:
        if other == winner:
            continue
        best = sentences(swapped(records, winner, other))[0]
        assert best.startswith(f"Best overall is {DEMO_VARIANTS[other]}: test perplexity "
                               f"{records[winner]['test']:.2f},"), best
        assert best != sentences(records)[0]
    # Transformer-XL with the authors' distances' figures and the other way round: no gain left to share
    authors = sentences(swapped(records, "transformer_xl", "segatron_xl_window_end"))[1]
    assert "here they do not gain over Transformer-XL overall" in authors
    ratio = records["transformer_xl"]["test"] / records["segatron_xl_window_end"]["test"]
    assert f"({ratio:.3f}x its test perplexity)" in authors


def test_where_each_variant_is_lowest_follows_the_kinds():
    """Make each variant lowest on one kind: the second sentence of the first paragraph names each with its kind."""
    from segatron_fairseq.cli.demo_summary import DEMO_VARIANTS, KIND_PHRASES

    records = records_of()
    for number, (name, kind) in enumerate(zip(DEMO_VARIANTS, KIND_PHRASES)):
        for other in DEMO_VARIANTS:
            records[other]["test_by_kind"][kind]["loss"] = 1.0 + (other != name) + 0.1 * number
    best = sentences(records)[0]
    for name, kind in zip(DEMO_VARIANTS, KIND_PHRASES):
        ppl = math.exp(records[name]["test_by_kind"][kind]["loss"])
        assert f"{DEMO_VARIANTS[name]} on {KIND_PHRASES[kind]} ({ppl:.2f})" in best, best


def test_the_table_shows_each_kind_as_perplexity():
    from segatron_fairseq.cli.lm_results import format_table, read_results

    results = read_results(str(STORED))
    lines = format_table(results).splitlines()
    assert lines[0].split() == ["model", "params", "valid", "ppl", "test", "ppl", "test", "/", "XL", "par.", "start",
                                "sent.", "start", "other"]
    for record, line in zip(results, lines[1:]):
        expected = [record["variant"], f"{record['params']:,}", f"{record['valid']:.2f}", f"{record['test']:.2f}",
                    f"{record['test'] / results[0]['test']:.3f}"]
        expected += [f"{math.exp(record['test_by_kind'][kind]['loss']):.2f}"
                     for kind in ("paragraph_start", "sentence_start", "other")]
        assert line.split() == expected
    assert lines[len(results) + 1].split()[2:] == [f"{k['tokens']:,}" for k in results[0]["test_by_kind"].values()]


def test_the_boundary_kinds_picture(tmp_path):
    from matplotlib import image

    from segatron_fairseq.cli.lm_results import read_results
    from segatron_fairseq.cli.plot import plot_boundary_kinds

    paths = plot_boundary_kinds(read_results(str(STORED)), str(tmp_path / "kinds"))
    assert paths == [str(tmp_path / "kinds.png"), str(tmp_path / "kinds.svg")]
    assert image.imread(paths[0]).shape[:2] == (500, 800)


def _broken(tmp_path, edit):
    results = json.loads(STORED.read_text())
    edit(results)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    return path


BROKEN = {  # name: (how the stored file is spoiled, what the error says after the file's name)
    "a demo variant missing": (lambda r: r.pop(), "no results of segatron_xl_window_end"),
    "a variant twice": (lambda r: r.append(r[0]), "a variant appears twice"),
    "no kinds": (lambda r: r[1].pop("test_by_kind"), "segatron_xl: test_by_kind does not hold the kinds"),
    "a kind without a count": (lambda r: r[0]["test_by_kind"]["other"].pop("tokens"), "has no count of tokens"),
    "a perplexity as text": (lambda r: r[2].update(test="3.1"), "test is '3.1', not a positive number"),
    "not a list": (lambda r: r.clear(), "not segatron-compare-lm results"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_malformed_file_is_refused_naming_it(case, tmp_path):
    edit, message = BROKEN[case]
    path = _broken(tmp_path, edit)
    with pytest.raises(ValueError, match="^" + str(path).replace(".", r"\.") + ": .*" + message.replace(".", r"\.")):
        records_of(path)


@pytest.mark.parametrize("case", ["missing", "directory", "not JSON", "malformed"])
def test_the_command_answers_bad_input_with_one_line(case, tmp_path, capsys):
    from segatron_fairseq.cli.demo_summary import cli_main

    path = {"missing": tmp_path / "nope.json", "directory": tmp_path, "not JSON": tmp_path / "results.json",
            "malformed": tmp_path / "results.json"}[case]
    if case == "not JSON":
        shutil.copyfile(STORED, path)
        path.write_text(path.read_text()[:-20])
    if case == "malformed":
        _broken(tmp_path, lambda r: r[0].pop("test"))
    with pytest.raises(SystemExit) as stop:
        cli_main([str(path)])
    assert stop.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_user_error(captured.err, "demo_summary", path)


@pytest.mark.parametrize("generated_corpus", [True, False])
def test_the_command_prints_the_sentences(generated_corpus, capsys):
    """The sentences, each a paragraph; under a run on the generated corpus the commands for WikiText-103."""
    from segatron_fairseq.cli.demo_summary import REAL_TEXT_COMMANDS, cli_main

    cli_main([str(STORED)] + (["--generated-corpus"] if generated_corpus else []))
    paragraphs = capsys.readouterr().out.strip().split("\n\n")
    sentences_printed = [" ".join(p.split("\n    ")[0].split()) for p in paragraphs]
    assert sentences_printed == [" ".join(s.split()) for s in sentences(records_of(), generated_corpus)]
    assert paragraphs[-1].split("\n    ")[1:] == (list(REAL_TEXT_COMMANDS) if generated_corpus else [])
