"""``segatron-sts``: zero-shot semantic textual similarity of a SegaBERT (or
BERT-baseline, or S-SegaBERT) checkpoint.

    segatron-sts --checkpoint ckpt/checkpoint_best.pt --data CORPUS [--pooling mean|cls|max] FILE [FILE ...]

Each sentence is encoded alone ([CLS] sentence [SEP], paragraph 0, sentence 0)
and its last layer pooled (default: the checkpoint's ``--pooling`` when it was
fine-tuned with ``siamese_nli``, else mean); a pair's prediction is
the cosine similarity of its two embeddings. Prints, per file and on average,
Spearman's and Pearson's correlation x 100 with the gold scores. A FILE is
read by its first line:

- GLUE STS-B (``index  genre  filename  year  old_index  source1  source2  sentence1  sentence2  score``),
- SICK (``pair_ID  sentence_A  sentence_B  relatedness_score  ...``),
- otherwise ``sentence1 \\t sentence2 \\t score`` lines, no header (STS12-16 style).

Every file is read before the model is loaded. A correlation needs two pairs
or more, gold scores that are not all equal and similarities that are not all
equal; a file without them is refused (the correlation is undefined), never
scored 0.
"""
import argparse
import csv
import math
import os
from typing import List, Tuple

import numpy as np
import torch

from segatron_fairseq.cli.user_errors import exit_on_user_error
from segatron_fairseq.evaluation.sentence_embeddings import POOLINGS


def read_sts(path: str) -> Tuple[List[str], List[str], np.ndarray]:
    """(first sentences, second sentences, gold scores) of an STS file (formats: see the module doc)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if r and any(x.strip() for x in r)]
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: STS file not found") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid UTF-8 ({err.reason})") from None
    if not rows:
        raise ValueError(f"{path}: no sentence pairs")
    header = [h.strip().lower() for h in rows[0]]
    if header[:2] == ["index", "genre"]:
        columns, start = (7, 8, 9), 1
    elif header[:1] == ["pair_id"]:
        columns, start = (1, 2, 3), 1
    else:
        columns, start = (0, 1, 2), 0
    first, second, scores = [], [], []
    for number, row in enumerate(rows[start:], start=start + 1):
        if len(row) <= max(columns):
            raise ValueError(f"{path}: line {number} has {len(row)} columns, needs {max(columns) + 1}")
        try:
            score = float(row[columns[2]])
        except ValueError:
            raise ValueError(f"{path}: line {number}: score {row[columns[2]]!r} is not a number") from None
        if not math.isfinite(score):
            raise ValueError(f"{path}: line {number}: score {row[columns[2]]!r} is not a finite number")
        scores.append(score)
        first.append(row[columns[0]])
        second.append(row[columns[1]])
    return first, second, np.asarray(scores)


def check_correlated(path: str, gold: np.ndarray) -> None:
    """``gold`` has a correlation: two scores or more, not all equal."""
    if len(gold) < 2:
        raise ValueError(f"{path}: {len(gold)} sentence pair(s); a correlation needs at least 2")
    if np.ptp(gold) == 0:
        raise ValueError(f"{path}: every gold score is {gold[0]:g}; the correlation is undefined")


class SentenceEncoder:
    """Pooled last-layer embeddings of single sentences, in SegaBERT's one-text layout."""

    def __init__(self, checkpoint: str, corpus: str, pooling: str, cpu: bool):
        from segatron_fairseq.data.text_encoder import text_encoder
        from segatron_fairseq.hub.checkpoints import load_checkpoint
        from segatron_fairseq.hub.segabert import SegaBERTHubInterface

        loaded = load_checkpoint(checkpoint, "segabert", os.path.abspath(corpus), corpus_option="--data")
        hub = SegaBERTHubInterface.from_loaded(loaded)
        self.model, self.dictionary = hub.model, hub.dictionary
        self.pooling = pooling or getattr(hub.task.cfg, "pooling", None) or "mean"
        self.device = "cuda" if torch.cuda.is_available() and not cpu else "cpu"
        self.model.to(self.device)
        self.encode = text_encoder(corpus, self.dictionary)
        self.token_table = hub.table_sizes["token"]

    @torch.no_grad()
    def embed(self, sentences: List[str], batch_size: int = 64) -> torch.Tensor:
        """(N, d) float embeddings."""
        from segatron_fairseq.criterions.siamese_nli import sentence_embedding
        from segatron_fairseq.data.sentence_prediction_dataset import SentencePredictionDataset
        from segatron_fairseq.segments import layout_of_paragraphs

        bos, eos, pad = self.dictionary.bos(), self.dictionary.eos(), self.dictionary.pad()
        examples = [layout_of_paragraphs([self.encode(s)], bos, eos, self.model.max_positions(), self.token_table)
                    for s in sentences]
        dataset = SentencePredictionDataset(examples, [0.0] * len(examples), pad, regression=True)
        out = []
        for start in range(0, len(examples), batch_size):
            batch = dataset.collater(list(range(start, min(start + batch_size, len(examples)))))
            net_input = {k: v.to(self.device) for k, v in batch["net_input"].items()}
            out.append(sentence_embedding(self.model, net_input, self.pooling, pad).float().cpu())
        return torch.cat(out)


def correlations(encoder: SentenceEncoder, path: str, pairs: Tuple[List[str], List[str], np.ndarray]
                 ) -> Tuple[int, float, float]:
    """(pairs, Spearman x 100, Pearson x 100) of one file's ``pairs`` (``read_sts``)."""
    from segatron_fairseq.evaluation.glue_metrics import pearson, spearman

    first, second, gold = pairs
    similarity = torch.nn.functional.cosine_similarity(encoder.embed(first), encoder.embed(second)).numpy()
    if np.ptp(similarity) == 0:
        raise ValueError(f"{path}: the model gives every pair the same similarity; the correlation is undefined")
    return len(gold), 100 * spearman(similarity, gold), 100 * pearson(similarity, gold)


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="segatron-sts", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="STS files (STS-B TSV, SICK, or sentence1/sentence2/score)")
    parser.add_argument("--checkpoint", required=True, help="a segabert checkpoint (pre-trained or fine-tuned)")
    parser.add_argument("--data", required=True, help="its pre-training corpus (segatron-preprocess directory)")
    parser.add_argument("--pooling", choices=POOLINGS, help="default: the checkpoint's, else mean")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    with exit_on_user_error(parser.prog):
        files = [(path, read_sts(path)) for path in args.files]
        for path, (_, _, gold) in files:
            check_correlated(path, gold)
        encoder = SentenceEncoder(args.checkpoint, args.data, args.pooling, args.cpu)
        rows = [(path, *correlations(encoder, path, pairs)) for path, pairs in files]
    width = max(len(os.path.basename(p)) for p, *_ in rows) + 2
    print(f"pooling {encoder.pooling}")
    print(f"{'file':<{width}}{'pairs':>8}{'spearman':>10}{'pearson':>10}")
    for path, pairs, rho, r in rows:
        print(f"{os.path.basename(path):<{width}}{pairs:>8}{rho:>10.2f}{r:>10.2f}")
    print(f"{'average':<{width}}{'':>8}{np.mean([row[2] for row in rows]):>10.2f}"
          f"{np.mean([row[3] for row in rows]):>10.2f}")


if __name__ == "__main__":
    cli_main()
