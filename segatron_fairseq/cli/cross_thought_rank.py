"""``cross-thought-rank``: rank candidate passages for questions by a
pre-trained Cross-Thought model's cross-sequence attention, without
fine-tuning (the paper's unsupervised HotpotQA(u) setting).

    cross-thought-rank --path checkpoint.pt --data DATA_BIN --passages passages.jsonl \\
        --questions questions.jsonl --embeddings passages.pt --top-k 20 --output ranked.jsonl

``--passages``: one passage per line, or JSON lines with ``text`` and an
optional ``id`` (default: the line's 0-based number among the passages).

``--questions``: one question per line (ranked against every passage), or
JSON lines with ``question`` (or ``text``), an optional ``id``, and the
question's own candidates, as the paper ranks each question's BM25 top 200:
``candidate_ids`` (ids of ``--passages``) or ``candidates`` (texts). Without
either, a question is ranked against every passage. ``gold`` (optional) lists
the relevant candidates: passage ids, or indexes into ``candidates``; when
questions have gold, Recall@k (the share of a question's gold candidates in
its top k, averaged over questions) and MRR (of the first gold candidate)
over the file are printed.

Every text is encoded once (``CrossThoughtHubInterface.encode``) and the
embeddings are saved to ``--embeddings``. They are reused only when
everything that changes an embedding is unchanged (checkpoint, the texts,
the dictionary and sub-word model, --max-length, the special-token settings,
--model-overrides); otherwise they are recomputed and the log says why.
An existing ``--embeddings`` file that is not such a cache (a checkpoint, say)
is refused before any work, never replaced, and so is an existing
``--output`` unless ``--overwrite``; both are checked writable before any work.
Output: one JSON line per question with its ``top_k`` candidates (``passage``:
the passage id, or the index into ``candidates``) and scores.
"""
import argparse
import ast
import hashlib
import json
import logging
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

from segatron_fairseq.cli.user_errors import check_output, exit_on_user_error, positive_int
from segatron_preprocess.atomic import atomic_path
from segatron_preprocess.corpus_format import DICT_FILE, SENTENCEPIECE_FILE

logger = logging.getLogger("cross_thought_rank")


@dataclass
class Question:
    id: object
    text: str
    candidate_ids: Optional[list]  # ids of --passages
    candidates: Optional[List[str]]  # texts of its own
    gold: Optional[list]  # passage ids, or indexes into candidates


def _is_jsonl(path: str) -> bool:
    return path.endswith(".jsonl")


def _json_lines(path: str):
    """(line number, object) of a JSON-lines file; errors name file and line."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                raise ValueError(f"{path}: line {number} is not JSON") from None
            if not isinstance(item, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object")
            yield number, item


def _text_lines(path: str):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                yield number, line.strip()


def _string(value, path: str, number: int, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path}: line {number}: {what} is not a string ({type(value).__name__})")
    return value


def _hashable_id(value, path: str, number: int, what: str):
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ValueError(f"{path}: line {number}: {what} {value!r} is not a string or an integer")
    return value


def read_passages(path: str) -> Tuple[List[str], list]:
    texts, ids = [], []
    try:
        if _is_jsonl(path):
            for number, item in _json_lines(path):
                if "text" not in item:
                    raise ValueError(f"{path}: line {number} has no 'text' field")
                texts.append(_string(item["text"], path, number, "'text'"))
                ids.append(_hashable_id(item.get("id", len(ids)), path, number, "'id'"))
        else:
            for _, line in _text_lines(path):
                texts.append(line)
                ids.append(len(ids))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid UTF-8 ({err.reason})") from None
    if not texts:
        raise ValueError(f"{path}: no passages")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: passage ids are not unique")
    return texts, ids


def read_questions(path: str, passage_ids: Optional[set]) -> List[Question]:
    questions = []
    try:
        if not _is_jsonl(path):
            if passage_ids is None:
                raise ValueError(f"{path}: plain-text questions are ranked against --passages, which is missing")
            return [Question(n, text, None, None, None) for n, (_, text) in enumerate(_text_lines(path))]
        for number, item in _json_lines(path):
            key = "question" if "question" in item else "text"
            if key not in item:
                raise ValueError(f"{path}: line {number} has no 'question' (or 'text') field")
            text = _string(item[key], path, number, f"'{key}'")
            candidate_ids = item.get("candidate_ids")
            candidates = item.get("candidates")
            if candidate_ids is not None and candidates is not None:
                raise ValueError(f"{path}: line {number} has both 'candidate_ids' and 'candidates'")
            if candidates is not None:
                if not isinstance(candidates, list) or not candidates:
                    raise ValueError(f"{path}: line {number}: 'candidates' is not a non-empty list of texts")
                candidates = [_string(c, path, number, f"candidate {k}") for k, c in enumerate(candidates)]
            if candidate_ids is not None:
                if not isinstance(candidate_ids, list) or not candidate_ids:
                    raise ValueError(f"{path}: line {number}: 'candidate_ids' is not a non-empty list of ids")
                candidate_ids = [_hashable_id(c, path, number, "candidate id") for c in candidate_ids]
            if (candidate_ids is not None or candidates is None) and passage_ids is None:
                raise ValueError(f"{path}: line {number} ranks passages by id, but no --passages file was given")
            for c in candidate_ids or []:
                if c not in passage_ids:
                    raise ValueError(f"{path}: line {number}: candidate id {c!r} is not in --passages")
            gold = item.get("gold")
            if gold is not None:
                if not isinstance(gold, list):
                    gold = [gold]
                pool = range(len(candidates)) if candidates is not None else (
                    candidate_ids if candidate_ids is not None else passage_ids)
                for g in gold:
                    if isinstance(g, bool) or g not in pool:
                        what = "an index into 'candidates'" if candidates is not None else "a candidate passage id"
                        raise ValueError(f"{path}: line {number}: gold {g!r} is not {what}")
            questions.append(Question(item.get("id", len(questions)), text, candidate_ids, candidates, gold))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid UTF-8 ({err.reason})") from None
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def texts_digest(texts: List[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def embedding_key(args, hub, texts: List[str], overrides: Dict) -> Dict[str, str]:
    """Everything that changes the embeddings of ``texts``."""
    special_tokens, shared = hub.model.special_tokens()
    sentencepiece = os.path.join(args.data, SENTENCEPIECE_FILE)
    return {
        "checkpoint": file_digest(args.path),
        "texts": texts_digest(texts),
        "dictionary": file_digest(os.path.join(args.data, DICT_FILE)),
        "sentencepiece": file_digest(sentencepiece) if os.path.isfile(sentencepiece) else "none",
        "max_length": str(args.max_length),
        "special_tokens": f"{special_tokens} shared={shared}",
        "model_overrides": json.dumps(overrides, sort_keys=True, default=str),
    }


def read_cache(path: str) -> Optional[Tuple[Dict[str, str], torch.Tensor]]:
    """The key and embeddings saved at ``path`` by an earlier run; None when
    there is no file. Anything else at ``path`` (a checkpoint, a damaged file,
    a directory) is refused, since this tool replaces the file it caches in."""
    if not os.path.lexists(path):
        return None
    if os.path.isdir(path):
        raise ValueError(f"{path}: --embeddings is a directory")
    try:
        cached = torch.load(path, map_location="cpu", weights_only=True)
        old_key, embeddings = cached["key"], cached["embeddings"]
        recognised = (set(cached) == {"key", "embeddings"} and isinstance(old_key, dict)
                      and isinstance(embeddings, torch.Tensor))
    except Exception:  # a file of another kind or a damaged one is never trusted, nor replaced
        recognised = False
    if not recognised:
        raise ValueError(f"{path}: --embeddings is an existing file that is not an embedding cache of "
                         f"cross-thought-rank; it is never replaced: remove it or name another file")
    return old_key, embeddings


def cached_embeddings(path: str, cache, key: Dict[str, str], count: int) -> Optional[torch.Tensor]:
    """The cached embeddings (``read_cache``) when they were computed under ``key``, else None."""
    if cache is None:
        return None
    old_key, embeddings = cache
    changed = [name for name in key if old_key.get(name) != key[name]]
    if changed or embeddings.size(0) != count:
        logger.info(f"{path} was computed with other settings (changed: {', '.join(changed) or 'size'}); "
                    f"recomputing")
        return None
    return embeddings


def recall_and_mrr(ranked: List[list], gold: List[list], ks: List[int]) -> Dict[str, float]:
    """Recall@k (the share of a question's gold candidates in its top k,
    averaged over questions) and MRR (reciprocal rank of the first gold
    candidate, 0 when none is ranked) over questions with gold."""
    pairs = [(r, set(g)) for r, g in zip(ranked, gold) if g]
    metrics = {}
    for k in ks:
        metrics[f"recall@{k}"] = sum(len(g.intersection(r[:k])) / len(g) for r, g in pairs) / len(pairs)
    metrics["mrr"] = sum(next((1.0 / (i + 1) for i, c in enumerate(r) if c in g), 0.0) for r, g in pairs) / len(pairs)
    return metrics


def model_overrides(text: str) -> Dict:
    """The dict of ``--model-overrides`` (a Python literal)."""
    try:
        overrides = ast.literal_eval(text) if text else {}
    except (ValueError, SyntaxError):
        raise ValueError(f"--model-overrides {text!r}: not a Python literal, e.g. \"{{'dropout': 0.0}}\"") from None
    if not isinstance(overrides, dict):
        raise ValueError(f"--model-overrides {text!r}: not a dict")
    return overrides


def main(args) -> None:
    from segatron_fairseq.hub.checkpoints import load_checkpoint
    from segatron_fairseq.hub.cross_thought import CrossThoughtHubInterface

    overrides = model_overrides(args.model_overrides)
    inputs = {"--path": args.path, "--passages": args.passages, "--questions": args.questions}
    check_output(args.output, option="--output", inputs={**inputs, "--embeddings": args.embeddings},
                 overwrite=args.overwrite)
    check_output(args.embeddings, option="--embeddings", inputs={**inputs, "--output": args.output},
                 overwrite=True)  # read_cache refuses a file that is not its cache
    cache = read_cache(args.embeddings)
    loaded = load_checkpoint(args.path, "cross_thought", args.data, overrides, corpus_option="--data")
    hub = CrossThoughtHubInterface.from_loaded(loaded)
    if torch.cuda.is_available() and not args.cpu:
        hub.cuda()
    passages, passage_ids = read_passages(args.passages) if args.passages else ([], [])
    questions = read_questions(args.questions, set(passage_ids) if args.passages else None)

    # one pool of texts to encode: the passages, then each question's own candidates
    pool, where = list(passages), {}
    for q in questions:
        for text in q.candidates or []:
            if text not in where:
                where[text] = len(pool)
                pool.append(text)
    key = embedding_key(args, hub, pool, overrides)  # the pool is never empty: read_questions checks
    embeddings = cached_embeddings(args.embeddings, cache, key, len(pool))
    if embeddings is not None:
        logger.info(f"reusing {len(pool):,} candidate embeddings from {args.embeddings}")
    else:
        embeddings = hub.encode(pool, args.max_length, args.batch_size)
        os.makedirs(os.path.dirname(os.path.abspath(args.embeddings)), exist_ok=True)
        with atomic_path(args.embeddings) as tmp:
            torch.save({"key": key, "embeddings": embeddings}, tmp)
        logger.info(f"encoded {len(pool):,} candidate texts to {args.embeddings}")

    row_of_passage = {pid: row for row, pid in enumerate(passage_ids)}
    question_embeddings = hub.encode([q.text for q in questions], args.max_length, args.batch_size)
    ranked_lists, gold_lists = [], []
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with atomic_path(args.output) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for q, question_embedding in zip(questions, question_embeddings):
            if q.candidates is not None:
                labels, rows = list(range(len(q.candidates))), [where[t] for t in q.candidates]
            else:
                labels = q.candidate_ids if q.candidate_ids is not None else passage_ids
                rows = [row_of_passage[c] for c in labels]
            scores = hub.rank_embeddings(question_embedding, embeddings[rows])
            order = scores.argsort(descending=True, stable=True).tolist()
            ranked_lists.append([labels[i] for i in order])
            gold_lists.append(q.gold)
            out.write(json.dumps({"question": q.id, "text": q.text, "top_k": [
                {"passage": labels[i], "score": round(float(scores[i]), 6)} for i in order[:args.top_k]]}) + "\n")
    logger.info(f"ranked candidates for {len(questions):,} questions -> {args.output}")
    with_gold = sum(1 for g in gold_lists if g)
    if with_gold:
        ks = sorted({int(k) for k in args.recall_k.split(",")})
        metrics = recall_and_mrr(ranked_lists, gold_lists, ks)
        print(f"{with_gold:,} questions with gold candidates: " +
              " | ".join(f"{name} {value:.4f}" for name, value in metrics.items()))


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="cross-thought-rank", description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--path", required=True, help="Cross-Thought checkpoint")
    p.add_argument("--data", required=True, help="the binarized pre-training corpus (dict.txt, sentencepiece.model)")
    p.add_argument("--passages", help="one passage per line, or .jsonl with 'text' (and 'id')")
    p.add_argument("--questions", required=True,
                   help="one question per line, or .jsonl with 'question', optional 'id', 'candidate_ids' or "
                        "'candidates', and 'gold'")
    p.add_argument("--embeddings", required=True,
                   help="where the candidate embeddings are saved and reused; an existing file that is not this "
                        "tool's cache is refused, never replaced")
    p.add_argument("--output", required=True, help="JSON lines: each question's top-k candidates")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output (else refused)")
    p.add_argument("--top-k", type=positive_int, default=20, help="candidates written per question")
    p.add_argument("--recall-k", default="1,5,20", help="k of the reported Recall@k, comma separated")
    p.add_argument("--max-length", type=positive_int, default=64, help="tokens kept of each text")
    p.add_argument("--batch-size", type=positive_int, default=64, help="texts per forward pass")
    p.add_argument("--model-overrides", default="", help="dict of model options, e.g. \"{'dropout': 0.0}\"")
    p.add_argument("--cpu", action="store_true", help="run on the CPU even when CUDA is available")
    args = p.parse_args(argv)
    try:
        [positive_int(k) for k in args.recall_k.split(",")]
    except (ValueError, argparse.ArgumentTypeError):
        p.error(f"--recall-k {args.recall_k!r}: comma-separated integers of at least 1")
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO,
                        stream=sys.stderr)
    with exit_on_user_error(p.prog, (TypeError,)):
        main(args)


if __name__ == "__main__":
    cli_main()
