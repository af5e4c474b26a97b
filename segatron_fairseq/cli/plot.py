"""``segatron-plot``: pictures of trained models (PNG and SVG).

    segatron-plot attention --model-dir checkpoints --data data-bin --text text.txt --layer 0 --out attn
    segatron-plot curves train_a.log train_b.log --labels A,B --out curves
    segatron-plot boundary --data data-bin --split valid checkpoint_a.pt checkpoint_b.pt --out boundary
    segatron-plot boundary-kinds results.json --out boundary_kinds

- ``attention``: one heat map per head of a layer (query by key) for the first
  segment of a text, with sentence starts (thin) and paragraph starts (thick)
  drawn on both axes (the Segatron paper's Figure 5).
- ``curves``: train and valid perplexity against updates, read from the logs
  of ``fairseq-train --log-format simple`` (the paper's Figure 2); ``--splits
  valid`` draws the valid curves alone.
- ``boundary``: perplexity by the target token's position in its sentence
  (scored as ``segatron-loss-by-boundary`` scores the split, with ``--data``'s
  dictionary).
- ``boundary-kinds``: each variant's test perplexity on the first tokens of
  paragraphs, of other sentences and on the other tokens, as bars, read from
  ``segatron-compare-lm --out``.

``--out PATH`` writes PATH.png and PATH.svg; existing ones are refused unless
``--overwrite``, before any work.
"""
import argparse
import math
import os
import re
import textwrap
from typing import Dict, List, Tuple

import numpy as np

from segatron_fairseq.cli.user_errors import check_output, exit_on_user_error, positive_int
from segatron_preprocess.atomic import atomic_paths
from segatron_preprocess.inputs import read_utf8

_TRAIN = re.compile(r"\| train_inner \| .*?ppl=([0-9.]+),.*?num_updates=(\d+)")
_VALID = re.compile(r"\| valid \| .*?\| ppl ([0-9.]+) \|.*?\| num_updates (\d+)")


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, plt.figure(figsize=(width, height), dpi=100)


def _save(plt, figure, out: str) -> List[str]:
    """``out``.png and ``out``.svg, each written beside its place and both renamed in
    when complete; an ``OSError`` (a full disk) names the file."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    paths = [f"{out}.png", f"{out}.svg"]
    with atomic_paths(paths) as staged:
        for path, tmp in zip(paths, staged):
            try:
                figure.savefig(tmp)
            except OSError as err:
                raise OSError(err.errno, err.strerror or str(err), path) from err
    plt.close(figure)
    return paths


def read_curves(log_path: str) -> Dict[str, List[Tuple[int, float]]]:
    """(num_updates, ppl) of the train_inner and valid lines of a fairseq-train log."""
    curves = {"train": [], "valid": []}
    if os.path.isdir(log_path):
        raise IsADirectoryError(f"{log_path}: a directory, not a log")
    if not os.path.isfile(log_path):
        raise FileNotFoundError(f"{log_path}: log not found")
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for name, pattern in (("train", _TRAIN), ("valid", _VALID)):
                match = pattern.search(line)
                if match:
                    curves[name].append((int(match.group(2)), float(match.group(1))))
    if not curves["train"] and not curves["valid"]:
        raise ValueError(f"{log_path}: no train_inner or valid lines of fairseq-train --log-format simple")
    return curves


CURVE_STYLES = {"train": "-", "valid": "o--"}


def plot_curves(logs: List[str], labels: List[str], out: str, splits=tuple(CURVE_STYLES)) -> List[str]:
    """Perplexity against updates of ``splits`` (train, valid) of each log; a log without any line of
    ``splits`` is refused (``ValueError`` naming it) before anything is drawn."""
    curves = {log: read_curves(log) for log in logs}
    for log, of_log in curves.items():
        if not any(of_log[split] for split in splits):
            raise ValueError(f"{log}: no {' or '.join(splits)} lines (a run that validated: "
                             f"fairseq-train --validate-interval-updates, segatron-compare-lm --validate-every)")
    plt, figure = _figure(8, 5)
    axes = figure.add_subplot(1, 1, 1)
    for log, label in zip(logs, labels):
        for split in splits:
            if curves[log][split]:
                updates, ppl = zip(*curves[log][split])
                axes.plot(updates, ppl, CURVE_STYLES[split], label=f"{label} {split}")
    axes.set_xlabel("updates")
    axes.set_ylabel("perplexity")
    axes.set_yscale("log")
    axes.legend()
    axes.grid(alpha=0.3)
    return _save(plt, figure, out)


def plot_attention(result: Dict, layer: int, out: str) -> List[str]:
    """``result``: ``SegatronXLHubInterface.attention``."""
    weights = result["layers"][layer].numpy()  # (H, T, T)
    heads, length = weights.shape[0], weights.shape[-1]
    columns = min(heads, 4)
    rows = math.ceil(heads / columns)
    plt, figure = _figure(4 * columns, 4 * rows)
    sentence = np.flatnonzero(result["sentence_starts"].numpy())
    paragraph = np.flatnonzero(result["paragraph_starts"].numpy())
    for head in range(heads):
        axes = figure.add_subplot(rows, columns, head + 1)
        axes.imshow(weights[head], cmap="viridis", vmin=0, interpolation="nearest")
        for position in sentence:
            axes.axhline(position - 0.5, color="white", linewidth=0.4)
            axes.axvline(position - 0.5, color="white", linewidth=0.4)
        for position in paragraph:
            axes.axhline(position - 0.5, color="red", linewidth=1.2)
            axes.axvline(position - 0.5, color="red", linewidth=1.2)
        axes.set_title(f"layer {layer}, head {head}")
        axes.set_xlabel("key")
        axes.set_ylabel("query")
        if length <= 40:
            axes.set_xticks(range(length), result["symbols"], rotation=90, fontsize=6)
            axes.set_yticks(range(length), result["symbols"], fontsize=6)
    figure.tight_layout()
    return _save(plt, figure, out)


def losses_by_sentence_position(losses: np.ndarray, token_index: np.ndarray, longest: int) -> np.ndarray:
    """Mean loss by the target's position in its sentence, positions >= ``longest`` pooled in the last."""
    positions = np.minimum(token_index.astype(np.int64), longest)
    sums = np.bincount(positions, weights=losses, minlength=longest + 1)
    counts = np.bincount(positions, minlength=longest + 1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def plot_boundary(data: str, split: str, checkpoints: List[str], tgt_len: int, longest: int, out: str) -> List[str]:
    from segatron_fairseq.cli.loss_by_boundary import check_inputs, checkpoint_losses
    from segatron_fairseq.data.segment_indexed_dataset import SegmentIndexedDataset
    from segatron_fairseq.evaluation.token_losses import read_stream

    check_inputs(data, checkpoints)
    prefix = os.path.join(data, split)
    tokens, sentence_start, paragraph_start = read_stream(prefix)
    corpus = SegmentIndexedDataset(prefix)  # kept: its arrays are views of its memory maps
    token_index = corpus.index_array("token")
    plt, figure = _figure(8, 5)
    axes = figure.add_subplot(1, 1, 1)
    for checkpoint in checkpoints:
        losses = checkpoint_losses(checkpoint, data, tokens, sentence_start, paragraph_start, tgt_len)
        by_position = losses_by_sentence_position(losses, token_index, longest)
        axes.plot(range(longest + 1), np.exp(by_position), "o-", label=os.path.basename(os.path.dirname(checkpoint))
                  or checkpoint)
    axes.set_xlabel(f"target's position in its sentence ({longest} = {longest} or later)")
    axes.set_ylabel("perplexity")
    axes.set_yscale("log")
    axes.legend()
    axes.grid(alpha=0.3)
    return _save(plt, figure, out)


def plot_boundary_kinds(results: List[Dict], out: str) -> List[str]:
    """Bars of each variant's test perplexity by kind of target token; ``results``: ``lm_results.read_results``."""
    from segatron_fairseq.cli.lm_results import kind_ppl
    from segatron_fairseq.evaluation.boundary_kinds import BOUNDARY_KINDS

    plt, figure = _figure(8, 5)
    axes = figure.add_subplot(1, 1, 1)
    width = 0.8 / len(results)
    for number, record in enumerate(results):
        positions = [kind + (number - (len(results) - 1) / 2) * width for kind in range(len(BOUNDARY_KINDS))]
        ppl = [kind_ppl(record, kind) or 0.0 for kind in BOUNDARY_KINDS]
        bars = axes.bar(positions, ppl, width, label=record["variant"])
        axes.bar_label(bars, fmt="%.2f", fontsize=7)
    counts = results[0]["test_by_kind"]
    axes.set_xticks(range(len(BOUNDARY_KINDS)),
                    [f"{textwrap.fill(description, 20)}\n({counts[kind]['tokens']:,} tokens)"
                     for kind, description in BOUNDARY_KINDS.items()])
    axes.set_ylim(0, axes.get_ylim()[1] * 1.15)  # room for the legend above the bars
    axes.set_ylabel("test perplexity")
    axes.set_title("Where each variant gains: test perplexity by kind of target token")
    axes.legend()
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return _save(plt, figure, out)


def read_text(path: str) -> str:
    """The text of ``path`` (UTF-8, not blank)."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: a directory, not a text file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: text file not found")
    text = read_utf8(path)
    if not text.strip():
        raise ValueError(f"{path}: no text")
    return text


def _inputs(args) -> Dict[str, str]:
    """The files a command reads, by how its user named them."""
    if args.command == "attention":
        return {"--text": args.text, "the checkpoint": os.path.join(args.model_dir, args.checkpoint_file)}
    if args.command == "boundary-kinds":
        return {"the results": args.results}
    return {f"the input {path}": path for path in (args.logs if args.command == "curves" else args.checkpoints)}


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="segatron-plot", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    attention = commands.add_parser("attention", help="heat maps of one layer's heads for a text")
    attention.add_argument("--model-dir", required=True, help="directory of the checkpoint")
    attention.add_argument("--checkpoint-file", default="checkpoint_best.pt", help="checkpoint in --model-dir")
    attention.add_argument("--data", required=True, help="the segatron-preprocess directory it was trained on")
    attention.add_argument("--text", required=True, help="a text file, in the corpus's input format")
    attention.add_argument("--layer", type=int, default=0, help="0-based layer")
    attention.add_argument("--max-tokens", type=positive_int, default=64, help="positions shown")
    attention.add_argument("--out", required=True, help="output path without extension (.png and .svg)")
    curves = commands.add_parser("curves", help="train / valid perplexity against updates")
    curves.add_argument("logs", nargs="+", help="fairseq-train logs (--log-format simple)")
    curves.add_argument("--labels", help="comma separated, one per log (default: the file names)")
    curves.add_argument("--splits", default="train,valid", help="comma separated, from train,valid")
    curves.add_argument("--out", required=True, help="output path without extension (.png and .svg)")
    boundary = commands.add_parser("boundary", help="perplexity by position in the sentence")
    boundary.add_argument("checkpoints", nargs="+", help="segatron_xl checkpoints")
    boundary.add_argument("--data", required=True, help="segatron-preprocess directory (the checkpoints' dictionary)")
    boundary.add_argument("--split", default="valid", help="the split scored")
    boundary.add_argument("--tgt-len", type=positive_int, default=64, help="tokens per segment")
    boundary.add_argument("--longest", type=positive_int, default=30, help="positions from this one on are pooled")
    boundary.add_argument("--out", required=True, help="output path without extension (.png and .svg)")
    kinds = commands.add_parser("boundary-kinds", help="test perplexity by kind of target token, per variant")
    kinds.add_argument("results", help="segatron-compare-lm --out (results.json)")
    kinds.add_argument("--out", required=True, help="output path without extension (.png and .svg)")
    for command in (attention, curves, boundary, kinds):
        command.add_argument("--overwrite", action="store_true", help="replace existing pictures (else refused)")
    args = parser.parse_args(argv)
    if args.command == "attention" and args.layer < 0:
        parser.error(f"--layer {args.layer}: must be 0 or more")
    if args.command == "curves":
        labels = args.labels.split(",") if args.labels else [os.path.basename(log) for log in args.logs]
        if len(labels) != len(args.logs):
            parser.error(f"--labels has {len(labels)} names for {len(args.logs)} logs")
        splits = tuple(args.splits.split(","))
        if not set(splits) <= set(CURVE_STYLES):
            parser.error(f"--splits {args.splits}: choose from {','.join(CURVE_STYLES)}")
    with exit_on_user_error(parser.prog):
        for extension in (".png", ".svg"):
            check_output(args.out + extension, inputs=_inputs(args), overwrite=args.overwrite)
        if args.command == "attention":
            from segatron_fairseq.hub.checkpoints import load_checkpoint
            from segatron_fairseq.hub.segatron_xl import SegatronXLHubInterface

            text = read_text(args.text)
            loaded = load_checkpoint(os.path.join(args.model_dir, args.checkpoint_file), "segatron_xl",
                                     os.path.abspath(args.data), corpus_option="--data")
            lm = SegatronXLHubInterface.from_loaded(loaded)
            result = lm.attention(text, max_tokens=args.max_tokens)
            if args.layer >= len(result["layers"]):
                parser.error(f"--layer {args.layer}: the model has {len(result['layers'])} layers")
            paths = plot_attention(result, args.layer, args.out)
        elif args.command == "curves":
            paths = plot_curves(args.logs, labels, args.out, splits)
        elif args.command == "boundary-kinds":
            from segatron_fairseq.cli.lm_results import read_results

            paths = plot_boundary_kinds(read_results(args.results), args.out)
        else:
            paths = plot_boundary(args.data, args.split, args.checkpoints, args.tgt_len, args.longest, args.out)
    print("wrote " + ", ".join(paths))


if __name__ == "__main__":
    cli_main()
