"""What a run needs before it binarizes: the sentence splitter, the sub-word
model and the dictionary. Each is taken from the options, reused from the
destination directory, or trained / built from the training split. A new one
is written to the run's staging directory (``stage``) and listed in
``Resources.new``, to be moved into the destination only when the whole run
succeeds; one that conflicts with what the destination already holds stops the
run before anything is written."""
import logging
import os
import shutil
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

from . import readers, sentences, subwords, units
from .binarize import Worker
from .corpus_format import DICT_FILE, PUNKT_DIR, SENTENCEPIECE_FILE, WORDPIECE_FILE
from .document_items import Segmenter
from .errors import PreprocessError
from .inputs import load_dictionary
from .jobs import plan_jobs, run_jobs

logger = logging.getLogger("segatron_preprocess")

SPLITTERS = ("punkt-trained", "punkt-pretrained")


@dataclass
class Resources:
    destdir: str
    stage: str
    new: List[str] = field(default_factory=list)  # names in ``stage`` to move into ``destdir``

    def existing(self, name: str) -> Optional[str]:
        path = os.path.join(self.destdir, name)
        return path if os.path.exists(path) else None

    def staged(self, name: str) -> str:
        self.new.append(name)
        return os.path.join(self.stage, name)


def _unit_texts(path: str, input_format: str, kinds) -> Iterator[str]:
    for unit in readers.read_units(path, input_format, 0, os.path.getsize(path)):
        if unit.kind in kinds:
            yield unit.text


def resolve_splitter(choice: str, resources: Resources, train_path: Optional[str], input_format: str,
                     train_chars: int, recorded: Optional[Dict]):
    """(Punkt tokenizer, identity) for ``--sentence-splitter choice``; the
    identity (name, source, sha256) must equal the one ``recorded`` in the
    destination, if any."""
    if choice == "punkt-pretrained":
        if not sentences.pretrained_available():
            raise PreprocessError("--sentence-splitter punkt-pretrained: NLTK's English Punkt model (punkt_tab) is "
                                  "not installed; use punkt-trained (the default) or a path")
        splitter, source = sentences.load_pretrained(), "NLTK english"
    elif choice == "punkt-trained":
        saved = sentences.saved_in(resources.destdir)
        if saved:
            splitter, source = sentences.load(saved), f"reused {saved}"
        elif train_path is None:
            raise PreprocessError(f"{os.path.join(resources.destdir, PUNKT_DIR)} does not exist and there is no "
                                  "--trainpref to train Punkt on")
        else:
            logger.info(f"training Punkt on {train_path} (up to {train_chars:,} characters)")
            params = sentences.train(_unit_texts(train_path, input_format, {units.PARAGRAPH}), train_chars)
            sentences.save(params, resources.staged(PUNKT_DIR))
            splitter, source = sentences.load_params(params), f"trained on {os.path.abspath(train_path)}"
    else:
        splitter, source = sentences.load(choice), os.path.abspath(choice)
    identity = {"name": choice if choice in SPLITTERS else "punkt-path", "source": source,
                **sentences.splitter_identity(splitter)}
    if isinstance(recorded, dict) and recorded.get("sha256") not in (None, identity["sha256"]):
        raise PreprocessError(
            f"{resources.destdir} was binarized with the sentence splitter {recorded.get('name')} "
            f"({recorded.get('source')}, sha256 {recorded['sha256'][:12]}), this run's is {identity['name']} "
            f"({source}, sha256 {identity['sha256'][:12]}): the indexes of its splits would not agree; use "
            f"another --destdir or the same splitter")
    return splitter, identity


def resolve_subwords(bpe: str, bpe_model: Optional[str], vocab_size: Optional[int], resources: Resources,
                     train_path: Optional[str], input_format: str, splitter, train_sentences: int):
    """``subwords.Words`` for ``--bpe none``, else the sentencepiece model:
    ``bpe_model``, the destination's, or one trained on the training split's
    sentences. A model, or a vocabulary size, that differs from the
    destination's is refused."""
    if bpe == "none":
        return subwords.Words()
    existing = resources.existing(SENTENCEPIECE_FILE)
    if existing:
        model = subwords.SentencePiece(existing)
        if bpe_model and not _same_file(bpe_model, existing):
            raise PreprocessError(f"{existing} is another sentencepiece model than --bpe-model {bpe_model}; use "
                                  "another --destdir")
        if vocab_size is not None and vocab_size != model.vocab_size:
            raise PreprocessError(f"{existing} has {model.vocab_size:,} pieces, not --bpe-vocab-size "
                                  f"{vocab_size:,}; use another --destdir, or leave --bpe-vocab-size out")
        return model
    if bpe_model:
        model = subwords.SentencePiece(bpe_model)
        shutil.copyfile(bpe_model, resources.staged(SENTENCEPIECE_FILE))
        return model
    if train_path is None:
        raise PreprocessError(f"{os.path.join(resources.destdir, SENTENCEPIECE_FILE)} does not exist: give "
                              "--bpe-model or --trainpref")
    vocab_size = vocab_size or subwords.DEFAULT_VOCAB_SIZE
    logger.info(f"training sentencepiece ({vocab_size} pieces) on {train_path}")
    segmenter = Segmenter(splitter, subwords.Words())

    def training_sentences():
        emitted = 0
        for unit in readers.read_units(train_path, input_format, 0, os.path.getsize(train_path)):
            if unit.kind in (units.PARAGRAPH, units.HEADING, units.TITLE):
                for words in segmenter.sentences(unit):
                    yield " ".join(words)
                    emitted += 1
                    if emitted >= train_sentences:
                        return

    path = resources.staged(SENTENCEPIECE_FILE)
    subwords.train_sentencepiece(training_sentences(), vocab_size, path, train_sentences)
    return subwords.SentencePiece(path)


def resolve_wordpiece(vocab: Optional[str], cased: bool, resources: Resources) -> "subwords.WordPiece":
    """``--bpe wordpiece``: the destination's vocabulary, or ``vocab`` copied
    there; a second, different vocabulary is refused."""
    existing = resources.existing(WORDPIECE_FILE)
    if existing:
        if vocab and not _same_file(vocab, existing):
            raise PreprocessError(f"{existing} is another WordPiece vocabulary than --bpe-vocab {vocab}; use "
                                  "another --destdir")
        return subwords.WordPiece(existing, cased)
    if not vocab:
        raise PreprocessError(f"--bpe wordpiece needs --bpe-vocab (BERT's vocab.txt): "
                              f"{os.path.join(resources.destdir, WORDPIECE_FILE)} does not exist")
    model = subwords.WordPiece(vocab, cased)
    shutil.copyfile(vocab, resources.staged(WORDPIECE_FILE))
    return model


def _same_file(a: str, b: str) -> bool:
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def build_dictionary(train_path: str, input_format: str, counting: Segmenter, chunk_bytes: int, workers: int,
                     threshold: int, nwords: int, stream_style: str):
    """The dictionary of the training split, built as fairseq-preprocess builds it."""
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    total = {}
    jobs = plan_jobs(train_path, input_format, chunk_bytes, workers, None)
    for counts in run_jobs(jobs, Worker(None, counting, stream_style), workers, "dictionary"):
        for word, count in counts.items():
            total[word] = total.get(word, 0) + count
    for word, count in sorted(total.items()):
        dictionary.add_symbol(word, count)
    dictionary.finalize(threshold=threshold, nwords=nwords, padding_factor=8)
    return dictionary


def resolve_dictionary(resources: Resources, srcdict, build):
    """``srcdict``, else ``build()`` (None without a training split), else the
    destination's ``dict.txt``; never a second dictionary in one destination."""
    existing_path = resources.existing(DICT_FILE)
    existing = load_dictionary(existing_path) if existing_path else None
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
        dictionary.save(resources.staged(DICT_FILE))
    return dictionary
