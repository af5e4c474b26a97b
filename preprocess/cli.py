"""``segatron-preprocess``: fairseq-preprocess plus paragraph/sentence/token indexes.

Arguments shared with ``fairseq-preprocess --only-source`` keep its names and
meaning; see README.md ("Segment-aware binarization") for the output layout.
"""
import argparse
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
from typing import Iterator, List, Optional, Tuple

from fairseq.data import Dictionary, indexed_dataset
from tqdm import tqdm

from preprocess import readers, sentences, subwords
from preprocess.binarize import INDEX_NAMES, Job, Segmenter, Stats, Worker
from preprocess.errors import PreprocessError

logger = logging.getLogger("segatron_preprocess")

DICT_FILE = "dict.txt"
METADATA_FILE = "segatron_preprocess.json"
SPLITTERS = ("auto", "punkt-pretrained", "punkt-trained")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="segatron-preprocess", description=__doc__.splitlines()[0])
    p.add_argument("--trainpref", help="training text file")
    p.add_argument("--validpref", help="validation text file(s), comma separated (valid, valid1, ...)")
    p.add_argument("--testpref", help="test text file(s), comma separated (test, test1, ...)")
    p.add_argument("--destdir", default="data-bin", help="output directory")
    p.add_argument("--srcdict", help="reuse this fairseq dictionary instead of building one")
    p.add_argument("--nwordssrc", type=int, default=-1, help="number of words to keep (-1: all)")
    p.add_argument("--thresholdsrc", type=int, default=0, help="drop words seen this many times or fewer")
    p.add_argument("--workers", type=int, default=1, help="number of processes")
    p.add_argument("--input-format", choices=readers.INPUT_FORMATS, default="lines",
                   help="wikitext: WikiText-103 files; lines: one paragraph per line, a blank line ends a "
                        "document; jsonl: one document per line with a 'text' field")
    p.add_argument("--sentence-splitter", default="auto",
                   help="punkt-pretrained | punkt-trained | PATH (punkt.json or a punkt_tab directory); "
                        "auto: NLTK's English model if installed, else punkt-trained")
    p.add_argument("--punkt-train-chars", type=int, default=5_000_000,
                   help="train Punkt on at most this many characters of the training split")
    p.add_argument("--bpe", choices=("none", "sentencepiece"), default="none")
    p.add_argument("--bpe-model", help="an existing sentencepiece model (else trained on the training split)")
    p.add_argument("--bpe-vocab-size", type=int, default=32000)
    p.add_argument("--bpe-train-sentences", type=int, default=2_000_000,
                   help="train sentencepiece on at most this many sentences of the training split")
    p.add_argument("--chunk-bytes", type=int, default=4 << 20,
                   help="input is cut at document starts into pieces of about this size, one job each")
    return p


def _input_files(args) -> List[Tuple[str, str]]:
    splits = []
    if args.trainpref:
        splits.append(("train", args.trainpref))
    for name, prefs in (("valid", args.validpref), ("test", args.testpref)):
        for k, path in enumerate(prefs.split(",") if prefs else []):
            splits.append((name if k == 0 else f"{name}{k}", path))
    if not splits:
        raise PreprocessError("nothing to do: give --trainpref, --validpref or --testpref")
    for split, path in splits:
        if not os.path.isfile(path):
            raise PreprocessError(f"{path}: input file for split '{split}' does not exist")
        if os.path.getsize(path) == 0:
            raise PreprocessError(f"{path}: input file for split '{split}' is empty")
    return splits


def _jobs(path: str, input_format: str, chunk_bytes: int, workers: int, out_dir: Optional[str]) -> List[Job]:
    size = os.path.getsize(path)
    chunks = max(workers, -(-size // chunk_bytes))
    offsets = readers.document_aligned_offsets(path, input_format, chunks)
    return [
        Job(path, input_format, start, end, None if out_dir is None else os.path.join(out_dir, str(i)))
        for i, (start, end) in enumerate(zip(offsets[:-1], offsets[1:]))
    ]


_PROCESS_WORKER: Optional[Worker] = None  # set in each pool process by _init_process


def _init_process(worker: Worker) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = worker


def _run_in_process(job: Job):
    return _PROCESS_WORKER(job)


def _run_jobs(jobs: List[Job], worker: Worker, workers: int, desc: str) -> Iterator:
    """Results of ``worker`` on ``jobs``, in order, with a progress bar in bytes."""
    total = sum(j.end - j.start for j in jobs)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=total < (16 << 20),
              file=sys.stderr) as bar:
        if workers <= 1 or len(jobs) == 1:
            results = map(worker, jobs)
            pool = None
        else:
            pool = multiprocessing.Pool(min(workers, len(jobs)), initializer=_init_process, initargs=(worker,))
            results = pool.imap(_run_in_process, jobs)
        try:
            for job, result in results:
                bar.update(job.end - job.start)
                yield result
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()


def _unit_texts(path: str, input_format: str, kinds) -> Iterator[str]:
    for unit in readers.read_units(path, input_format, 0, os.path.getsize(path)):
        if unit.kind in kinds:
            yield unit.text


def resolve_splitter(args, train_path: Optional[str]):
    choice = args.sentence_splitter
    saved = os.path.join(args.destdir, sentences.PUNKT_FILE)
    if choice not in SPLITTERS:
        return sentences.load(choice), f"punkt from {os.path.abspath(choice)}"
    if choice in ("auto", "punkt-pretrained") and sentences.pretrained_available():
        return sentences.load_pretrained(), "punkt-pretrained (NLTK english)"
    if os.path.isfile(saved):
        return sentences.load(saved), f"punkt-trained (reused {saved})"
    if train_path is None:
        raise PreprocessError(f"{saved} does not exist and there is no --trainpref to train Punkt on")
    logger.info(f"training Punkt on {train_path} (up to {args.punkt_train_chars:,} characters)")
    params = sentences.train(_unit_texts(train_path, args.input_format, {readers.PARAGRAPH}),
                             args.punkt_train_chars)
    sentences.save(params, saved)
    return sentences.load(saved), f"punkt-trained (saved to {saved})"


def resolve_subwords(args, train_path: Optional[str], splitter):
    if args.bpe == "none":
        if args.bpe_model:
            raise PreprocessError("--bpe-model needs --bpe sentencepiece")
        return subwords.Words()
    saved = os.path.join(args.destdir, subwords.SENTENCEPIECE_FILE)
    if args.bpe_model:
        model = subwords.SentencePiece(args.bpe_model)
        if os.path.abspath(args.bpe_model) != os.path.abspath(saved):
            shutil.copyfile(args.bpe_model, saved + ".tmp")
            os.replace(saved + ".tmp", saved)
        return model
    if os.path.isfile(saved):
        return subwords.SentencePiece(saved)
    if train_path is None:
        raise PreprocessError(f"{saved} does not exist: give --bpe-model or --trainpref")
    logger.info(f"training sentencepiece ({args.bpe_vocab_size} pieces) on {train_path}")
    segmenter = Segmenter(splitter, subwords.Words())

    def training_sentences():
        emitted = 0
        for unit in readers.read_units(train_path, args.input_format, 0, os.path.getsize(train_path)):
            if unit.kind in (readers.PARAGRAPH, readers.HEADING, readers.TITLE):
                for words in segmenter.sentences(unit):
                    yield " ".join(words)
                    emitted += 1
                    if emitted >= args.bpe_train_sentences:
                        return

    subwords.train_sentencepiece(training_sentences(), args.bpe_vocab_size, saved, args.bpe_train_sentences)
    return subwords.SentencePiece(saved)


def _load_dictionary(path: str) -> Dictionary:
    try:
        return Dictionary.load(path)
    except FileNotFoundError:
        raise PreprocessError(f"{path}: dictionary file not found") from None
    except (ValueError, RuntimeError, UnicodeDecodeError) as err:
        raise PreprocessError(f"{path}: not a fairseq dictionary ({err})") from None


def resolve_dictionary(args, train_path: Optional[str], srcdict: Optional[Dictionary],
                       counting: Segmenter) -> Dictionary:
    """``srcdict``, or one built from the training split as fairseq-preprocess
    builds it, or the destination's ``dict.txt``; never a second dictionary in
    one destination."""
    existing_path = os.path.join(args.destdir, DICT_FILE)
    existing = _load_dictionary(existing_path) if os.path.isfile(existing_path) else None
    if srcdict is not None:
        dictionary = srcdict
    elif train_path is not None:
        dictionary = Dictionary()
        jobs = _jobs(train_path, args.input_format, args.chunk_bytes, args.workers, None)
        total = {}
        for counts in _run_jobs(jobs, Worker(None, counting), args.workers, "dictionary"):
            for word, count in counts.items():
                total[word] = total.get(word, 0) + count
        for word, count in sorted(total.items()):
            dictionary.add_symbol(word, count)
        dictionary.finalize(threshold=args.thresholdsrc, nwords=args.nwordssrc, padding_factor=8)
    elif existing is not None:
        return existing
    else:
        raise PreprocessError("no dictionary: give --srcdict or --trainpref, or a --destdir holding dict.txt")
    if existing is not None and existing.symbols != dictionary.symbols:
        raise PreprocessError(
            f"{existing_path} holds a different dictionary ({len(existing)} symbols) than this run's "
            f"({len(dictionary)} symbols); use another --destdir, or pass --srcdict {existing_path}"
        )
    if existing is None:
        dictionary.save(existing_path + ".tmp")
        os.replace(existing_path + ".tmp", existing_path)
    return dictionary


def binarize_split(args, split: str, path: str, dictionary: Dictionary, segmenter: Segmenter, work_dir: str) -> Stats:
    chunk_dir = os.path.join(work_dir, split)
    os.makedirs(chunk_dir)
    jobs = _jobs(path, args.input_format, args.chunk_bytes, args.workers, chunk_dir)
    stats = Stats()
    for chunk_stats in _run_jobs(jobs, Worker(dictionary, segmenter), args.workers, split):
        stats.add(chunk_stats)
    if stats.items == 0:
        raise PreprocessError(f"{path}: no text found for split '{split}' (input format {args.input_format})")

    # merge the chunks under temporary names, then move into place: the index
    # datasets first and the token dataset's .idx last.
    merged = os.path.join(work_dir, f"{split}.merged")
    for suffix in ("",) + tuple(f".{name}" for name in INDEX_NAMES):
        first = jobs[0].out_prefix + suffix
        dtype = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(first)).dtype
        builder = indexed_dataset.MMapIndexedDatasetBuilder(indexed_dataset.data_file_path(merged + suffix), dtype)
        for job in jobs:
            builder.merge_file_(job.out_prefix + suffix)
        builder.finalize(indexed_dataset.index_file_path(merged + suffix))
    final = os.path.join(args.destdir, split)
    for suffix in tuple(f".{name}" for name in INDEX_NAMES) + ("",):
        os.replace(indexed_dataset.data_file_path(merged + suffix), indexed_dataset.data_file_path(final + suffix))
        os.replace(indexed_dataset.index_file_path(merged + suffix), indexed_dataset.index_file_path(final + suffix))
    shutil.rmtree(chunk_dir)
    return stats


def _log_summary(split: str, path: str, stats: Stats) -> None:
    unk = 100.0 * stats.unknown / max(stats.tokens, 1)
    logger.info(
        f"[{split}] {path}: {stats.documents:,} documents, {stats.paragraphs:,} paragraphs, "
        f"{stats.sentences:,} sentences, {stats.items:,} items, {stats.tokens:,} tokens, "
        f"{unk:.3f}% replaced by <unk>; longest sentence {stats.longest_sentence:,} tokens, "
        f"longest paragraph {stats.longest_paragraph:,} tokens"
    )


def main(args) -> None:
    splits = _input_files(args)
    train_path = args.trainpref
    srcdict = _load_dictionary(args.srcdict) if args.srcdict else None
    if args.sentence_splitter == "punkt-pretrained" and not sentences.pretrained_available():
        raise PreprocessError(
            "--sentence-splitter punkt-pretrained: NLTK's English Punkt model (punkt_tab) is not installed; "
            "use punkt-trained or a path"
        )
    os.makedirs(args.destdir, exist_ok=True)
    if args.bpe == "none":
        # whitespace tokens do not depend on sentences: settle the dictionary
        # (and refuse a conflicting one) before anything else is written
        dictionary = resolve_dictionary(args, train_path, srcdict, Segmenter(None, subwords.Words()))
    splitter, splitter_name = resolve_splitter(args, train_path)
    logger.info(f"sentence splitter: {splitter_name}")
    segmenter = Segmenter(splitter, resolve_subwords(args, train_path, splitter))
    if args.bpe != "none":
        dictionary = resolve_dictionary(args, train_path, srcdict, segmenter)
    logger.info(f"dictionary: {len(dictionary):,} types ({os.path.join(args.destdir, DICT_FILE)})")

    work_dir = tempfile.mkdtemp(prefix=".segatron-preprocess-", dir=args.destdir)
    summaries = {}
    try:
        for split, path in splits:
            stats = binarize_split(args, split, path, dictionary, segmenter, work_dir)
            _log_summary(split, path, stats)
            summaries[split] = {"input": os.path.abspath(path), **stats.__dict__}
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)

    metadata_path = os.path.join(args.destdir, METADATA_FILE)
    metadata = {}
    if os.path.isfile(metadata_path):
        with open(metadata_path) as f:
            metadata = json.load(f)
    metadata.update(input_format=args.input_format, sentence_splitter=splitter_name, bpe=args.bpe)
    metadata.setdefault("splits", {}).update(summaries)
    with open(metadata_path + ".tmp", "w") as f:
        json.dump(metadata, f, indent=2)
    os.replace(metadata_path + ".tmp", metadata_path)
    logger.info(f"wrote {', '.join(s for s, _ in splits)} to {args.destdir}")


def cli_main(argv=None) -> None:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    args = get_parser().parse_args(argv)
    if args.workers < 1:
        raise SystemExit("segatron-preprocess: error: --workers must be >= 1")
    try:
        main(args)
    except PreprocessError as err:
        print(f"segatron-preprocess: error: {err}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    cli_main()
