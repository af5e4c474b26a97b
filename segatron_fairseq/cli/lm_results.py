"""segatron-compare-lm's results (``--out``, e.g. results.json): read back with checks, and shown as its table.

The file is a JSON list with one record per variant, in the order they were trained::

    {"variant": "segatron_xl", "params": 141568, "updates": 800, "train_seconds": 61.2, "valid": 3.40, "test": 3.44,
     "test_by_kind": {"paragraph_start": {"tokens": 421, "loss": 2.31}, "sentence_start": {...}, "other": {...}}}

``valid`` and ``test`` are fairseq-eval-lm's perplexities; ``test_by_kind`` holds, for each kind of
``boundary_kinds.BOUNDARY_KINDS``, the test targets of that kind and their mean loss in nats (``None``
when the split has none), scored as segatron-loss-by-boundary scores a split.
"""
import json
import math
import numbers
import os
import textwrap
from typing import Dict, List, Optional

from segatron_fairseq.evaluation.boundary_kinds import BOUNDARY_KINDS

BASELINE = "transformer_xl"
# the table's column title of each kind of target token
KIND_COLUMNS = {"paragraph_start": "par. start", "sentence_start": "sent. start", "other": "other"}


def kind_ppl(record: Dict, kind: str) -> Optional[float]:
    """The test perplexity of ``record``'s targets of ``kind`` (None when the split has none)."""
    loss = record["test_by_kind"][kind]["loss"]
    return None if loss is None else math.exp(loss)


def _record_problem(record) -> Optional[str]:
    """What is wrong with one record, or None."""
    if not isinstance(record, dict):
        return f"a record is {type(record).__name__}, not an object"
    if not isinstance(record.get("variant"), str):
        return "a record has no variant name"
    name = record["variant"]
    for key in ("params", "updates", "valid", "test"):
        value = record.get(key)
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0:
            return f"{name}: {key} is {value!r}, not a positive number"
    kinds = record.get("test_by_kind")
    if not isinstance(kinds, dict) or set(kinds) != set(BOUNDARY_KINDS):
        return f"{name}: test_by_kind does not hold the kinds {', '.join(BOUNDARY_KINDS)}"
    for kind, figures in kinds.items():
        tokens, loss = (figures.get("tokens"), figures.get("loss")) if isinstance(figures, dict) else (None, None)
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            return f"{name}: test_by_kind {kind} has no count of tokens"
        if (loss is None) != (tokens == 0) or loss is not None and (
                not isinstance(loss, numbers.Real) or not math.isfinite(loss)):
            return f"{name}: test_by_kind {kind} has loss {loss!r} for {tokens} tokens"
    return None


def read_results(path: str) -> List[Dict]:
    """The records of segatron-compare-lm's results file ``path``; an ``OSError`` or ``ValueError`` naming
    ``path`` when it is missing, not JSON, or not such a list (one record per variant, each variant once)."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: a directory, not segatron-compare-lm's results file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file (segatron-compare-lm --out writes it)")
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(results, list) or not results:
        raise ValueError(f"{path}: not segatron-compare-lm results (a list of variants' records)")
    for record in results:
        problem = _record_problem(record)
        if problem:
            raise ValueError(f"{path}: not segatron-compare-lm results: {problem}")
    names = [record["variant"] for record in results]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a variant appears twice ({', '.join(names)})")
    return results


def format_table(results: List[Dict]) -> str:
    """The comparison table: size, valid and test perplexity, test against Transformer-XL (when it is one of
    the variants), and test perplexity by kind of target token, with each kind's number of tokens."""
    baseline = next((r for r in results if r["variant"] == BASELINE), None)
    lines = [f"{'model':<24} {'params':>9} {'valid ppl':>10} {'test ppl':>10} {'test / XL':>10}"
             + "".join(f"{title:>12}" for title in KIND_COLUMNS.values())]
    for r in results:
        ratio = f"{r['test'] / baseline['test']:.3f}" if baseline else "-"
        by_kind = (kind_ppl(r, kind) for kind in KIND_COLUMNS)
        lines.append(f"{r['variant']:<24} {r['params']:>9,} {r['valid']:>10.2f} {r['test']:>10.2f} {ratio:>10}"
                     + "".join(f"{ppl:>12.2f}" if ppl is not None else f"{'-':>12}" for ppl in by_kind))
    counts = results[0]["test_by_kind"]
    lines.append(f"{'test tokens':<24} {'':>9} {'':>10} {'':>10} {'':>10}"
                 + "".join(f"{counts[kind]['tokens']:>12,}" for kind in KIND_COLUMNS))
    legend = "test ppl by kind of target: " + ", ".join(f"{KIND_COLUMNS[kind]} = {description}"
                                                         for kind, description in BOUNDARY_KINDS.items())
    return "\n".join(lines + textwrap.wrap(legend, width=len(lines[0]), subsequent_indent="  "))
