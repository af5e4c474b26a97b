"""One ``segatron-preprocess`` run: resolve the splitter, sub-words and
dictionary, binarize every split in document-aligned jobs, merge, record."""
import logging
import os
import shutil
import tempfile
from typing import List, Optional, Tuple

from . import sentences, subwords
from .binarize import Segmenter, Stats, Worker
from .corpus_format import BPE, DICT_FILE, INPUT_FORMAT, SENTENCE_SPLITTER
from .errors import PreprocessError
from .jobs import plan_jobs, run_jobs
from .output import merge_chunks, update_metadata
from .resources import build_dictionary, load_dictionary, resolve_dictionary, resolve_splitter, resolve_subwords

logger = logging.getLogger("segatron_preprocess")


def input_files(trainpref: Optional[str], validpref: Optional[str], testpref: Optional[str]) -> List[Tuple[str, str]]:
    """(split, path) pairs: train, valid, valid1, ..., test, test1, ...; each path must be a non-empty file."""
    splits = []
    if trainpref:
        splits.append(("train", trainpref))
    for name, prefs in (("valid", validpref), ("test", testpref)):
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


def binarize_split(split: str, path: str, input_format: str, chunk_bytes: int, workers: int, dictionary,
                   segmenter: Segmenter, destdir: str, work_dir: str) -> Stats:
    chunk_dir = os.path.join(work_dir, split)
    os.makedirs(chunk_dir)
    jobs = plan_jobs(path, input_format, chunk_bytes, workers, chunk_dir)
    stats = Stats()
    for chunk_stats in run_jobs(jobs, Worker(dictionary, segmenter), workers, split):
        stats.add(chunk_stats)
    if stats.items == 0:
        raise PreprocessError(f"{path}: no text found for split '{split}' (input format {input_format})")
    merge_chunks([job.out_prefix for job in jobs], os.path.join(work_dir, f"{split}.merged"),
                 os.path.join(destdir, split))
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


def run(args) -> None:
    """The whole run for parsed ``segatron-preprocess`` arguments."""
    splits = input_files(args.trainpref, args.validpref, args.testpref)
    train_path = args.trainpref
    srcdict = load_dictionary(args.srcdict) if args.srcdict else None
    if args.sentence_splitter == "punkt-pretrained" and not sentences.pretrained_available():
        raise PreprocessError(
            "--sentence-splitter punkt-pretrained: NLTK's English Punkt model (punkt_tab) is not installed; "
            "use punkt-trained or a path"
        )
    os.makedirs(args.destdir, exist_ok=True)

    def dictionary_for(counting: Segmenter):
        def build():
            if train_path is None:
                return None
            return build_dictionary(train_path, args.input_format, counting, args.chunk_bytes, args.workers,
                                    args.thresholdsrc, args.nwordssrc)
        return resolve_dictionary(args.destdir, srcdict, build)

    if args.bpe == "none":
        # whitespace tokens do not depend on sentences: settle the dictionary
        # (and refuse a conflicting one) before anything else is written
        dictionary = dictionary_for(Segmenter(None, subwords.Words()))
    splitter, splitter_name = resolve_splitter(args.sentence_splitter, args.destdir, train_path,
                                               args.input_format, args.punkt_train_chars)
    logger.info(f"sentence splitter: {splitter_name}")
    segmenter = Segmenter(splitter, resolve_subwords(args.bpe, args.bpe_model, args.destdir, train_path,
                                                     args.input_format, splitter, args.bpe_vocab_size,
                                                     args.bpe_train_sentences))
    if args.bpe != "none":
        dictionary = dictionary_for(segmenter)
    logger.info(f"dictionary: {len(dictionary):,} types ({os.path.join(args.destdir, DICT_FILE)})")

    work_dir = tempfile.mkdtemp(prefix=".segatron-preprocess-", dir=args.destdir)
    summaries = {}
    try:
        for split, path in splits:
            stats = binarize_split(split, path, args.input_format, args.chunk_bytes, args.workers, dictionary,
                                   segmenter, args.destdir, work_dir)
            _log_summary(split, path, stats)
            summaries[split] = {"input": os.path.abspath(path), **stats.__dict__}
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    update_metadata(args.destdir, {INPUT_FORMAT: args.input_format, SENTENCE_SPLITTER: splitter_name,
                                   BPE: args.bpe}, summaries)
    logger.info(f"wrote {', '.join(s for s, _ in splits)} to {args.destdir}")
