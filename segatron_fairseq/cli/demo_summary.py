"""The demo's reading of its comparison: three sentences computed from segatron-compare-lm's results.json.

    python -m segatron_fairseq.cli.demo_summary demo_runs/results.json [--generated-corpus]

scripts/demo.sh prints them under the table. They say which variant is best overall and on which kind of
target token each variant is best; how much of the gain of the authors' distances over Transformer-XL sits
on sentence-initial tokens (their queries see where the coming sentences start); what the corpus can and
cannot show, and how to run the same comparison on real text. Every figure is read from the file, so the
text follows the run.
"""
import argparse
import math
import textwrap
from typing import Dict, List

from segatron_fairseq.cli.lm_results import BASELINE, kind_ppl, read_results
from segatron_fairseq.cli.user_errors import exit_on_user_error
from segatron_fairseq.evaluation.boundary_kinds import BOUNDARY_KINDS, SENTENCE_INITIAL_KINDS

AUTHORS_DISTANCES = "segatron_xl_window_end"
# the variants the demo trains, in its order, with what they are
DEMO_VARIANTS = {
    BASELINE: "Transformer-XL",
    "segatron_xl": "Segatron-XL with Eq. 3 distances",
    AUTHORS_DISTANCES: "Segatron-XL with the authors' distances",
}
KIND_PHRASES = {"paragraph_start": "the first tokens of paragraphs",
                "sentence_start": "the first tokens of other sentences",
                "other": "the other tokens"}
# the same comparison on real text, printed under the sentences of a run on the generated corpus
REAL_TEXT_COMMANDS = ("bash scripts/prepare_wikitext103.sh /path/to/wikitext-103",
                      "bash scripts/demo.sh --data data-bin/wikitext-103")


def demo_records(path: str) -> Dict[str, Dict]:
    """The records of ``path`` (``lm_results.read_results``) by variant; a ``ValueError`` naming ``path``
    unless it holds the three variants of ``DEMO_VARIANTS``."""
    records = {record["variant"]: record for record in read_results(path)}
    missing = [name for name in DEMO_VARIANTS if name not in records]
    if missing:
        raise ValueError(f"{path}: no results of {', '.join(missing)} (the demo compares {', '.join(DEMO_VARIANTS)})")
    return records


def _mean_loss(record: Dict, kinds) -> float:
    """The mean test loss (nats) over the targets of ``kinds``."""
    figures = [record["test_by_kind"][kind] for kind in kinds if record["test_by_kind"][kind]["tokens"]]
    return sum(f["tokens"] * f["loss"] for f in figures) / sum(f["tokens"] for f in figures)


def best_sentence(records: Dict[str, Dict]) -> str:
    """Which variant has the lowest test perplexity, and which is lowest on each kind of target token."""
    lowest = min(records[name]["test"] for name in DEMO_VARIANTS)
    best = [name for name in DEMO_VARIANTS if records[name]["test"] == lowest]
    if len(best) == 1:
        opening = f"Best overall is {DEMO_VARIANTS[best[0]]}: test perplexity {lowest:.2f}"
    else:
        tied = " and ".join(DEMO_VARIANTS[name] for name in best)
        opening = f"{tied} tie for best overall: test perplexity {lowest:.2f}"
    others = [f"{records[name]['test']:.2f} for {DEMO_VARIANTS[name]}" for name in DEMO_VARIANTS if name not in best]
    if others:
        opening += f", against {' and '.join(others)}"
    wins = {name: [] for name in DEMO_VARIANTS}
    for kind in BOUNDARY_KINDS:
        if records[best[0]]["test_by_kind"][kind]["tokens"]:
            winner = min(DEMO_VARIANTS, key=lambda name: records[name]["test_by_kind"][kind]["loss"])
            wins[winner].append(f"{KIND_PHRASES[kind]} ({kind_ppl(records[winner], kind):.2f})")
    where = "; ".join(f"{DEMO_VARIANTS[name]} on {' and '.join(kinds)}" for name, kinds in wins.items() if kinds)
    return f"{opening}. Lowest perplexity by kind of target token: {where}."


def authors_distances_sentence(records: Dict[str, Dict]) -> str:
    """How much of the authors' distances' gain over Transformer-XL sits on sentence-initial tokens."""
    baseline, authors = records[BASELINE], records[AUTHORS_DISTANCES]
    tokens = {kind: figures["tokens"] for kind, figures in baseline["test_by_kind"].items()}
    gains = {kind: tokens[kind] * (baseline["test_by_kind"][kind]["loss"] - authors["test_by_kind"][kind]["loss"])
             for kind in BOUNDARY_KINDS if tokens[kind]}
    initial_share = sum(tokens[kind] for kind in SENTENCE_INITIAL_KINDS) / sum(tokens.values())
    initial_ppl = {name: math.exp(_mean_loss(record, SENTENCE_INITIAL_KINDS)) for name, record in
                   ((BASELINE, baseline), (AUTHORS_DISTANCES, authors))}
    opening = ("The authors' distances count sentences and paragraphs back from the end of the window, so each "
               "query sees where the coming sentences start, which a language model reading left to right "
               "cannot know")
    on_initial = (f"sentence-initial tokens ({initial_share:.0%} of the test tokens; perplexity "
                  f"{initial_ppl[AUTHORS_DISTANCES]:.2f} against Transformer-XL's {initial_ppl[BASELINE]:.2f})")
    total = sum(gains.values())
    if total > 0:
        share = sum(gains.get(kind, 0.0) for kind in SENTENCE_INITIAL_KINDS) / total
        return (f"{opening}: their test perplexity is {authors['test'] / baseline['test']:.3f}x Transformer-XL's, "
                f"and {share:.0%} of that gain sits on {on_initial}.")
    return (f"{opening}; here they do not gain over Transformer-XL overall ({authors['test'] / baseline['test']:.3f}x "
            f"its test perplexity), and on {on_initial}.")


def corpus_sentence(records: Dict[str, Dict], generated_corpus: bool) -> str:
    """What the corpus and the models' size can and cannot show, and the next command."""
    baseline = records[BASELINE]
    test_tokens = sum(figures["tokens"] for figures in baseline["test_by_kind"].values())
    size = f"the models are tiny ({baseline['params']:,} parameters, {baseline['updates']:,} updates)"
    if generated_corpus:
        initial, other = (math.exp(_mean_loss(baseline, kinds)) for kinds in (SENTENCE_INITIAL_KINDS, ("other",)))
        return (f"The generated corpus ({test_tokens:,} test tokens) has the structure of WikiText (documents, "
                f"sections, paragraphs of several sentences) but sentences of one template, whose first tokens "
                f"Transformer-XL already predicts with perplexity {initial:.2f} (the other tokens: {other:.2f}), "
                f"and {size}: it shows where each variant's loss goes, not how much segment-aware positions gain "
                f"on real text; for that, run the same comparison on WikiText-103:")
    return (f"These are {test_tokens:,} test tokens of your corpus and {size}: larger models and longer "
            f"training (segatron-compare-lm's --layers, --dim, --max-update; docs/segatron-xl.md) show whether "
            f"the differences hold.")


def summary_sentences(records: Dict[str, Dict], generated_corpus: bool) -> List[str]:
    """The demo's three sentences about ``records`` (``demo_records``)."""
    return [best_sentence(records), authors_distances_sentence(records), corpus_sentence(records, generated_corpus)]


def summary_text(records: Dict[str, Dict], generated_corpus: bool) -> str:
    """What the demo prints: the sentences as paragraphs of at most 110 characters, then, for the generated
    corpus, the commands of the same comparison on WikiText-103."""
    paragraphs = [textwrap.fill(sentence, width=110, break_on_hyphens=False, break_long_words=False)
                  for sentence in summary_sentences(records, generated_corpus)]
    if generated_corpus:
        paragraphs[-1] += "".join(f"\n    {command}" for command in REAL_TEXT_COMMANDS)
    return "\n\n".join(paragraphs)


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="demo_summary", description=__doc__.splitlines()[0])
    p.add_argument("results", help="segatron-compare-lm's --out of the three demo variants")
    p.add_argument("--generated-corpus", action="store_true", help="the results are of the demo's generated corpus")
    args = p.parse_args(argv)
    with exit_on_user_error(p.prog):
        records = demo_records(args.results)
    print(summary_text(records, args.generated_corpus))


if __name__ == "__main__":
    cli_main()
