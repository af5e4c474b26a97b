"""What a run needs before it binarizes: the sentence splitter, the sub-word
model and the dictionary. Each is taken from the options, reused from the
destination directory, or trained / built from the training split and saved
there (atomically), so that every split of one directory shares them."""
import logging
import os
import shutil
from typing import Iterator, Optional

from . import readers, sentences, subwords
from .atomic import atomic_path
from .binarize import Segmenter, Worker
from .corpus_format import DICT_FILE, LEGACY_PUNKT_FILE, PUNKT_DIR, SENTENCEPIECE_FILE
from .errors import PreprocessError
from .jobs import plan_jobs, run_jobs

logger = logging.getLogger("segatron_preprocess")

SPLITTERS = ("auto", "punkt-pretrained", "punkt-trained")


def _unit_texts(path: str, input_format: str, kinds) -> Iterator[str]:
    for unit in readers.read_units(path, input_format, 0, os.path.getsize(path)):
        if unit.kind in kinds:
            yield unit.text


def resolve_splitter(choice: str, destdir: str, train_path: Optional[str], input_format: str,
                     train_chars: int):
    """(Punkt tokenizer, description) for ``--sentence-splitter choice``."""
    if choice not in SPLITTERS:
        return sentences.load(choice), f"punkt from {os.path.abspath(choice)}"
    if choice in ("auto", "punkt-pretrained") and sentences.pretrained_available():
        return sentences.load_pretrained(), "punkt-pretrained (NLTK english)"
    for saved in (os.path.join(destdir, PUNKT_DIR), os.path.join(destdir, LEGACY_PUNKT_FILE)):
        if os.path.exists(saved):
            return sentences.load(saved), f"punkt-trained (reused {saved})"
    saved = os.path.join(destdir, PUNKT_DIR)
    if train_path is None:
        raise PreprocessError(f"{saved} does not exist and there is no --trainpref to train Punkt on")
    logger.info(f"training Punkt on {train_path} (up to {train_chars:,} characters)")
    sentences.save(sentences.train(_unit_texts(train_path, input_format, {readers.PARAGRAPH}), train_chars), saved)
    return sentences.load(saved), f"punkt-trained (saved to {saved})"


def resolve_subwords(bpe: str, bpe_model: Optional[str], destdir: str, train_path: Optional[str],
                     input_format: str, splitter, vocab_size: int, train_sentences: int):
    """``subwords.Words`` for ``--bpe none``, else the sentencepiece model:
    ``bpe_model`` (copied into ``destdir``), the one in ``destdir``, or one
    trained on the training split's sentences."""
    if bpe == "none":
        if bpe_model:
            raise PreprocessError("--bpe-model needs --bpe sentencepiece")
        return subwords.Words()
    saved = os.path.join(destdir, SENTENCEPIECE_FILE)
    if bpe_model:
        model = subwords.SentencePiece(bpe_model)
        if os.path.abspath(bpe_model) != os.path.abspath(saved):
            with atomic_path(saved) as tmp:
                shutil.copyfile(bpe_model, tmp)
        return model
    if os.path.isfile(saved):
        return subwords.SentencePiece(saved)
    if train_path is None:
        raise PreprocessError(f"{saved} does not exist: give --bpe-model or --trainpref")
    logger.info(f"training sentencepiece ({vocab_size} pieces) on {train_path}")
    segmenter = Segmenter(splitter, subwords.Words())

    def training_sentences():
        emitted = 0
        for unit in readers.read_units(train_path, input_format, 0, os.path.getsize(train_path)):
            if unit.kind in (readers.PARAGRAPH, readers.HEADING, readers.TITLE):
                for words in segmenter.sentences(unit):
                    yield " ".join(words)
                    emitted += 1
                    if emitted >= train_sentences:
                        return

    subwords.train_sentencepiece(training_sentences(), vocab_size, saved, train_sentences)
    return subwords.SentencePiece(saved)


def load_dictionary(path: str):
    from fairseq.data import Dictionary

    try:
        return Dictionary.load(path)
    except FileNotFoundError:
        raise PreprocessError(f"{path}: dictionary file not found") from None
    except (ValueError, RuntimeError, UnicodeDecodeError) as err:
        raise PreprocessError(f"{path}: not a fairseq dictionary ({err})") from None


def build_dictionary(train_path: str, input_format: str, counting: Segmenter, chunk_bytes: int, workers: int,
                     threshold: int, nwords: int):
    """The dictionary of the training split, built as fairseq-preprocess builds it."""
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    total = {}
    jobs = plan_jobs(train_path, input_format, chunk_bytes, workers, None)
    for counts in run_jobs(jobs, Worker(None, counting), workers, "dictionary"):
        for word, count in counts.items():
            total[word] = total.get(word, 0) + count
    for word, count in sorted(total.items()):
        dictionary.add_symbol(word, count)
    dictionary.finalize(threshold=threshold, nwords=nwords, padding_factor=8)
    return dictionary


def resolve_dictionary(destdir: str, srcdict, build):
    """``srcdict``, else ``build()`` (None without a training split), else the
    destination's ``dict.txt``; never a second dictionary in one destination."""
    existing_path = os.path.join(destdir, DICT_FILE)
    existing = load_dictionary(existing_path) if os.path.isfile(existing_path) else None
    dictionary = srcdict if srcdict is not None else build()
    if dictionary is None:
        if existing is None:
            raise PreprocessError("no dictionary: give --srcdict or --trainpref, or a --destdir holding dict.txt")
        return existing
    if existing is not None and existing.symbols != dictionary.symbols:
        raise PreprocessError(
            f"{existing_path} holds a different dictionary ({len(existing)} symbols) than this run's "
            f"({len(dictionary)} symbols); use another --destdir, or pass --srcdict {existing_path}"
        )
    if existing is None:
        with atomic_path(existing_path) as tmp:
            dictionary.save(tmp)
    return dictionary
