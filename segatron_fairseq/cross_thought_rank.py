"""``cross-thought-rank``: rank passages for questions with a pre-trained
Cross-Thought model's cross-sequence attention, without fine-tuning (the
paper's unsupervised HotpotQA(u) setting).

    cross-thought-rank --path checkpoint.pt --data DATA_BIN --passages passages.txt \
        --questions questions.txt --embeddings passages.pt --top-k 20 --output ranked.jsonl

Passages and questions are text files with one text per line, or JSON lines
with a ``text`` (and optional ``id``) field. The passages are encoded once and
their embeddings saved to ``--embeddings`` (reused while the passages file and
the checkpoint are unchanged); each question is then scored against all of
them by alpha[0][1:] of Eq. 7 (``CrossThoughtEncoder.rank``). Output: one
JSON line per question with its ``top_k`` passages and scores.
"""
import argparse
import hashlib
import json
import os
import sys
from typing import List, Tuple

import torch
from fairseq import checkpoint_utils

from segatron_fairseq.data.text_encoder import text_encoder
from segatron_fairseq.tasks.segabert_mlm import load_dictionary_with_mask


def read_texts(path: str) -> Tuple[List[str], List]:
    texts, ids = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            if path.endswith(".jsonl"):
                try:
                    item = json.loads(line)
                    texts.append(item["text"])
                    ids.append(item.get("id", len(ids)))
                except (ValueError, KeyError, TypeError):
                    raise ValueError(f"{path}: line {number} is not a JSON object with a 'text' field") from None
            else:
                texts.append(line.strip())
                ids.append(len(ids))
    if not texts:
        raise ValueError(f"{path}: no texts")
    return texts, ids


def fingerprint(*paths: str) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@torch.no_grad()
def embed(model, encode, texts: List[str], max_length: int, batch_size: int, pad: int, device) -> torch.Tensor:
    """(len(texts), N, d) sequence embeddings, each text a sequence of its own."""
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = [encode(t)[:max_length] or [pad] for t in texts[start:start + batch_size]]
        length = max(len(c) for c in chunk)
        tokens = torch.full((len(chunk), 1, length), pad, dtype=torch.long)
        for b, ids in enumerate(chunk):
            tokens[b, 0, : len(ids)] = torch.tensor(ids)
        _, _, embeddings = model.encoder.encode_sequences(tokens.to(device))
        out.append(embeddings[:, 0].float().cpu())
    return torch.cat(out)


def main(args) -> None:
    import segatron_fairseq  # noqa: F401  (registers the model)

    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    models, _ = checkpoint_utils.load_model_ensemble([args.path], arg_overrides={"data": args.data})
    model = models[0].to(device).eval()
    if not hasattr(model.encoder, "rank"):
        raise ValueError(f"{args.path} is not a Cross-Thought checkpoint")
    dictionary = load_dictionary_with_mask(args.data)
    encode = text_encoder(args.data, dictionary)
    passages, passage_ids = read_texts(args.passages)
    questions, question_ids = read_texts(args.questions)

    key = fingerprint(args.passages, args.path)
    cached = torch.load(args.embeddings, map_location="cpu") if os.path.isfile(args.embeddings) else None
    if cached is not None and cached.get("fingerprint") == key:
        passage_embeddings = cached["embeddings"]
        print(f"reusing {len(passages):,} passage embeddings from {args.embeddings}", file=sys.stderr)
    else:
        passage_embeddings = embed(model, encode, passages, args.max_length, args.batch_size, dictionary.pad(), device)
        torch.save({"fingerprint": key, "embeddings": passage_embeddings}, args.embeddings + ".tmp")
        os.replace(args.embeddings + ".tmp", args.embeddings)
        print(f"encoded {len(passages):,} passages to {args.embeddings}", file=sys.stderr)

    question_embeddings = embed(model, encode, questions, args.max_length, args.batch_size, dictionary.pad(), device)
    top_k = min(args.top_k, len(passages))
    candidates = passage_embeddings.to(device)
    with open(args.output + ".tmp", "w", encoding="utf-8") as out:
        for start in range(0, len(questions), args.batch_size):
            with torch.no_grad():
                scores = model.encoder.rank(question_embeddings[start:start + args.batch_size].to(device), candidates)
            best = scores.topk(top_k, dim=1)
            for row, (values, indexes) in enumerate(zip(best.values.tolist(), best.indices.tolist())):
                q = start + row
                out.write(json.dumps({"question": question_ids[q], "text": questions[q], "top_k": [
                    {"passage": passage_ids[i], "score": round(v, 6)} for v, i in zip(values, indexes)]}) + "\n")
    os.replace(args.output + ".tmp", args.output)
    print(f"ranked {len(passages):,} passages for {len(questions):,} questions -> {args.output}", file=sys.stderr)


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="cross-thought-rank", description=__doc__.splitlines()[0])
    p.add_argument("--path", required=True, help="Cross-Thought checkpoint")
    p.add_argument("--data", required=True, help="the binarized pre-training corpus (dict.txt, sentencepiece.model)")
    p.add_argument("--passages", required=True, help="one passage per line, or .jsonl with 'text' (and 'id')")
    p.add_argument("--questions", required=True, help="one question per line, or .jsonl with 'text' (and 'id')")
    p.add_argument("--embeddings", required=True, help="where the passage embeddings are saved and reused")
    p.add_argument("--output", required=True, help="JSON lines: each question's top-k passages")
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--max-length", type=int, default=64, help="tokens kept of each text")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--cpu", action="store_true")
    args = p.parse_args(argv)
    try:
        main(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"cross-thought-rank: error: {err}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    cli_main()
