"""One ``segatron-preprocess`` run, all or nothing:

1. check every input file and option;
2. lock the destination (one run at a time, ``staging.locked_destination``)
   and check its recorded settings;
3. in a staging directory: resolve the splitter, sub-words and dictionary,
   binarize every split in document-aligned jobs, merge;
4. commit (``output.commit``): only now does the destination change.

A SIGTERM or SIGINT stops the run at its next step (``staging.check_interrupted``).
An ``OSError`` while the run writes (a full disk, a quota) ends it the same
way, with one line (``_writing``).
"""
import contextlib
import logging
import os
from typing import Dict, List, Optional, Tuple

from .corpus_format import (
    BPE,
    BPE_CASED,
    BPE_VOCAB_SIZE,
    DICT_FILE,
    INPUT_FORMAT,
    SENTENCE_SPLITTER,
    SENTENCEPIECE,
    STREAM_STYLE,
    WORDPIECE,
    read_metadata,
)
from .errors import PreprocessError
from .inputs import check_regular_file, check_text_file, input_files, load_dictionary
from .jobs import plan_jobs, pool_context, run_jobs
from .output import commit, continue_paragraph_index, merge_chunks
from .staging import check_interrupted, interruptible, locked_destination, remove_abandoned, staging_directory

logger = logging.getLogger("segatron_preprocess")


def binarize_split(split: str, path: str, args, worker, stage: str):
    """Binarize ``path`` into ``stage/split`` (through per-job chunks)."""
    from .document_items import Stats

    chunk_dir = os.path.join(stage, f"{split}.chunks")
    os.makedirs(chunk_dir)
    jobs = plan_jobs(path, args.input_format, args.chunk_bytes, args.workers, chunk_dir)
    stats, chunk_stats = Stats(), []
    for result in run_jobs(jobs, worker, args.workers, split):
        stats.add(result)
        chunk_stats.append(result)
    if stats.items == 0:
        raise PreprocessError(f"{path}: no text found for split '{split}' (input format {args.input_format})")
    merge_chunks([job.out_prefix for job in jobs], os.path.join(stage, split))
    if args.stream_style == "authors":
        continue_paragraph_index(os.path.join(stage, split), chunk_stats)
    return stats


def _log_summary(split: str, path: str, stats) -> None:
    unk = 100.0 * stats.unknown / max(stats.tokens, 1)
    logger.info(
        f"[{split}] {path}: {stats.documents:,} documents, {stats.paragraphs:,} paragraphs, "
        f"{stats.sentences:,} sentences, {stats.items:,} items, {stats.tokens:,} tokens, "
        f"{unk:.3f}% replaced by <unk>; longest sentence {stats.longest_sentence:,} tokens, "
        f"longest paragraph {stats.longest_paragraph:,} tokens"
    )


def _check_subword_options(args) -> None:
    """Each sub-word option belongs to one --bpe."""
    for option, value, bpe in (("--bpe-model", args.bpe_model, SENTENCEPIECE),
                               ("--bpe-vocab", args.bpe_vocab, WORDPIECE), ("--bpe-cased", args.bpe_cased, WORDPIECE)):
        if value and args.bpe != bpe:
            raise PreprocessError(f"{option} needs --bpe {bpe}")


def _check_recorded_settings(destdir: str, metadata: Dict, args) -> None:
    """Settings that must agree with the splits already in the destination."""
    recorded = {BPE: metadata.get(BPE), STREAM_STYLE: metadata.get(STREAM_STYLE, "fairseq" if metadata else None),
                BPE_CASED: metadata.get(BPE_CASED)}
    wanted = {BPE: args.bpe, STREAM_STYLE: args.stream_style, BPE_CASED: args.bpe_cased}
    for key, value in recorded.items():
        if value is not None and value != wanted[key]:
            option = "--" + key.replace("_", "-")
            raise PreprocessError(f"{destdir} was binarized with {option} {value}, this run asks for "
                                  f"{option} {wanted[key]}; use another --destdir")


def check_run(args) -> Tuple[List[Tuple[str, str]], Optional[object]]:
    """Everything that can be checked before the destination is touched: the
    inputs and the options."""
    _check_subword_options(args)
    splits = input_files(args.trainpref, args.validpref, args.testpref)
    for split, path in splits:
        check_text_file(path, split, args.input_format)
    srcdict = load_dictionary(args.srcdict) if args.srcdict else None
    for option, path in (("--bpe-model", args.bpe_model), ("--bpe-vocab", args.bpe_vocab)):
        if path:
            check_regular_file(path, option)
    _check_destdir(args.destdir)
    _recorded_metadata(args.destdir)
    return splits, srcdict


def _recorded_metadata(destdir: str) -> Dict:
    """The destination's metadata; ``PreprocessError`` when it is not what segatron-preprocess writes."""
    try:
        return read_metadata(destdir)
    except ValueError as err:
        raise PreprocessError(f"{err}; --destdir must be a segatron-preprocess directory") from None


def _check_destdir(destdir: str) -> None:
    """``destdir`` is a directory, or nothing yet (the run creates it)."""
    try:
        os.stat(destdir)
    except FileNotFoundError:
        if os.path.lexists(destdir):
            raise PreprocessError(f"{destdir}: --destdir is a symbolic link to a path that does not exist") from None
        return
    except OSError as err:  # a symbolic link loop, a file on the way
        raise PreprocessError(f"{destdir}: --destdir cannot be used ({err.strerror})") from None
    if not os.path.isdir(destdir):
        raise PreprocessError(f"{destdir}: --destdir is a file, not a directory")


@contextlib.contextmanager
def _writing(destdir: str, what: str):
    """The run writing ``what`` in ``destdir`` (into its staging directory): an
    ``OSError`` (a full disk, a quota, an I/O error) becomes one line naming
    the file it names outside ``destdir`` (an input that could not be read),
    else ``destdir``. The staging directory goes with the run, so ``destdir``
    stays as it was."""
    try:
        yield
    except OSError as err:
        staged = os.path.join(os.path.abspath(destdir), "")
        if err.filename and not os.path.abspath(err.filename).startswith(staged):
            failure = f"{err.filename}: cannot read it"
        else:
            failure = f"{destdir}: cannot write {what}"
        raise PreprocessError(f"{failure} ({err.strerror or err}); {destdir} left as it was") from None


def run(args) -> None:
    """The whole run for parsed ``segatron-preprocess`` arguments."""
    if args.workers > 1:
        pool_context()  # its forkserver imports the workers' modules while this process goes on
    splits, srcdict = check_run(args)
    with _writing(args.destdir, "the run's files"), interruptible(), locked_destination(args.destdir):
        metadata = _recorded_metadata(args.destdir)
        _check_recorded_settings(args.destdir, metadata, args)
        remove_abandoned(args.destdir)
        with staging_directory(args.destdir) as stage:
            _binarize_and_commit(args, splits, srcdict, metadata, stage)
    logger.info(f"wrote {', '.join(s for s, _ in splits)} to {args.destdir}")


def _binarize_and_commit(args, splits, srcdict, metadata: Dict, stage: str) -> None:
    """Steps 3 and 4 of a run, in ``stage``. The modules that import fairseq
    are imported only now, once the checks have passed."""
    from . import subwords
    from .binarize import Worker
    from .document_items import Segmenter
    from .resources import (
        Resources,
        build_dictionary,
        resolve_dictionary,
        resolve_splitter,
        resolve_subwords,
        resolve_wordpiece,
    )

    train_path = args.trainpref
    resources = Resources(args.destdir, stage)

    def dictionary_for(counting):
        def build():
            if train_path is None:
                return None
            return build_dictionary(train_path, args.input_format, counting, args.chunk_bytes, args.workers,
                                    args.thresholdsrc, args.nwordssrc, args.stream_style)
        with _writing(args.destdir, DICT_FILE):
            return resolve_dictionary(resources, srcdict, build)

    split_headings = args.stream_style == "authors"
    if args.bpe == "none":
        # whitespace tokens do not depend on sentences: settle the dictionary
        # (and refuse a conflicting one) before training anything
        dictionary = dictionary_for(Segmenter(None, subwords.Words()))
    with _writing(args.destdir, "the sentence splitter"):
        splitter, splitter_identity = resolve_splitter(args.sentence_splitter, resources, train_path,
                                                       args.input_format, args.punkt_train_chars,
                                                       metadata.get(SENTENCE_SPLITTER))
    logger.info(f"sentence splitter: {splitter_identity['name']} ({splitter_identity['source']}, sha256 "
                f"{splitter_identity['sha256'][:12]})")
    with _writing(args.destdir, "the sub-word model"):
        if args.bpe == WORDPIECE:
            words = resolve_wordpiece(args.bpe_vocab, args.bpe_cased, resources)
        else:
            words = resolve_subwords(args.bpe, args.bpe_model, args.bpe_vocab_size, resources, train_path,
                                     args.input_format, splitter, args.bpe_train_sentences)
    segmenter = Segmenter(splitter, words, split_headings)
    if args.bpe != "none":
        dictionary = dictionary_for(segmenter)
    logger.info(f"dictionary: {len(dictionary):,} types ({os.path.join(args.destdir, DICT_FILE)})")

    worker = Worker(dictionary, segmenter, args.stream_style)
    summaries = {}
    for split, path in splits:
        check_interrupted()
        with _writing(args.destdir, f"the {split} split"):
            stats = binarize_split(split, path, args, worker, stage)
        _log_summary(split, path, stats)
        summaries[split] = {"input": os.path.abspath(path), **stats.__dict__}
    settings = {INPUT_FORMAT: args.input_format, SENTENCE_SPLITTER: splitter_identity, BPE: args.bpe,
                STREAM_STYLE: args.stream_style}
    if args.bpe != "none":
        settings[BPE_VOCAB_SIZE] = words.vocab_size
    if args.bpe == WORDPIECE:
        settings[BPE_CASED] = args.bpe_cased
    check_interrupted()
    commit(args.destdir, stage, resources.new, [s for s, _ in splits], settings, summaries)
