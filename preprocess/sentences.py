"""Sentence splitting with NLTK Punkt.

Three sources of Punkt parameters:

- ``punkt-pretrained``: NLTK's English model (``punkt_tab``), when installed;
- ``punkt-trained``: Punkt trained unsupervised on the training split, saved
  in NLTK's own ``punkt_tab`` format (``save_punkt_params``) as ``punkt_tab/``
  in the destination directory and reused for the other splits;
- a path: a ``punkt_tab`` language directory (``.../punkt_tab/english``, or one
  written by this tool), or a ``punkt.json`` written by segatron-preprocess 0.1.0.

NLTK reads and writes model files only under the roots of ``nltk.data.path``;
``_nltk_may_use`` adds a directory to them for the duration of one call.
"""
import bisect
import contextlib
import json
import os
from typing import Iterable, List

from .atomic import atomic_path
from .errors import PreprocessError


def pretrained_available() -> bool:
    try:
        load_pretrained()
    except LookupError:
        return False
    return True


def load_pretrained():
    from nltk.tokenize.punkt import PunktTokenizer

    return PunktTokenizer("english")


def train(texts: Iterable[str], max_chars: int):
    """Train Punkt without supervision on at most ``max_chars`` characters;
    returns ``PunktParameters``."""
    from nltk.tokenize.punkt import PunktTrainer

    trainer = PunktTrainer()
    buffer, size, total = [], 0, 0
    for text in texts:
        buffer.append(text)
        size += len(text) + 1
        if size >= 1 << 20:
            trainer.train("\n".join(buffer), finalize=False)
            total += size
            buffer, size = [], 0
        if total + size >= max_chars:
            break
    if buffer:
        trainer.train("\n".join(buffer), finalize=False)
    trainer.finalize_training()
    return trainer.get_params()


@contextlib.contextmanager
def _nltk_may_use(directory: str):
    import nltk

    root = os.path.abspath(directory)
    nltk.data.path.append(root)
    try:
        yield
    finally:
        nltk.data.path.remove(root)


def save(params, directory: str) -> None:
    """Write ``params`` to ``directory`` in the punkt_tab format, atomically."""
    from nltk.tokenize.punkt import save_punkt_params

    parent = os.path.dirname(os.path.abspath(directory))
    with atomic_path(directory) as tmp, _nltk_may_use(parent):
        os.makedirs(tmp, mode=0o700)
        save_punkt_params(params, dir=tmp)
        os.chmod(tmp, 0o755)
        for name in os.listdir(tmp):
            os.chmod(os.path.join(tmp, name), 0o644)


def load(path: str):
    """A ``PunktSentenceTokenizer`` from a punkt_tab directory or a 0.1.0 ``punkt.json``."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    if os.path.isdir(path):
        return PunktSentenceTokenizer(_load_punkt_tab(path))
    return PunktSentenceTokenizer(_load_legacy_json(path))


def _load_punkt_tab(directory: str):
    from nltk.data import FileSystemPathPointer
    from nltk.tokenize.punkt import load_punkt_params

    try:
        with _nltk_may_use(directory):
            return load_punkt_params(FileSystemPathPointer(os.path.abspath(directory)))
    except (LookupError, OSError, ValueError) as err:
        raise PreprocessError(f"{directory}: not a punkt_tab model directory ({err})") from None


def _load_legacy_json(path: str):
    from nltk.tokenize.punkt import PunktParameters

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        params = PunktParameters()
        params.abbrev_types = set(data["abbrev_types"])
        params.collocations = {tuple(pair) for pair in data["collocations"]}
        params.sent_starters = set(data["sent_starters"])
        for word, flags in data["ortho_context"]:
            params.ortho_context[word] = flags
    except FileNotFoundError:
        raise PreprocessError(f"{path}: Punkt model not found") from None
    except (ValueError, KeyError, TypeError) as err:
        raise PreprocessError(f"{path}: not a Punkt model written by segatron-preprocess ({err!r})") from None
    return params


def sentence_of_tokens(splitter, text: str, token_starts: List[int]) -> List[int]:
    """Sentence number (0-based) of each token of ``text``, given the character
    offset where each token starts. Tokens never straddle sentences: a token
    belongs to the sentence in which it starts."""
    boundaries = [start for start, _ in splitter.span_tokenize(text)][1:]
    if not boundaries:
        return [0] * len(token_starts)
    return [bisect.bisect_right(boundaries, start) for start in token_starts]
