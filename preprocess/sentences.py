"""Sentence splitting with NLTK Punkt.

Three sources of Punkt parameters:

- ``punkt-pretrained``: NLTK's English model (``punkt_tab``), when installed;
- ``punkt-trained``: Punkt trained unsupervised on the training split, saved as
  ``punkt.json`` in the destination directory and reused for the other splits;
- a path: a ``punkt.json`` written by this tool, or a ``punkt_tab`` language
  directory (``.../punkt_tab/english``).
"""
import bisect
import json
import os
from typing import Iterable, List

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer, PunktTrainer

from preprocess.errors import PreprocessError

PUNKT_FILE = "punkt.json"


def pretrained_available() -> bool:
    try:
        load_pretrained()
    except LookupError:
        return False
    return True


def load_pretrained() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktTokenizer

    return PunktTokenizer("english")


def train(texts: Iterable[str], max_chars: int) -> PunktParameters:
    """Train Punkt without supervision on at most ``max_chars`` characters."""
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


def save(params: PunktParameters, path: str) -> None:
    data = {
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted(list(pair) for pair in params.collocations),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": sorted(params.ortho_context.items()),
    }
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    os.replace(tmp, path)


def load(path: str) -> PunktSentenceTokenizer:
    """A ``punkt.json`` file or a ``punkt_tab`` language directory."""
    if os.path.isdir(path):
        from nltk.data import FileSystemPathPointer
        from nltk.tokenize.punkt import load_punkt_params

        try:
            return PunktSentenceTokenizer(load_punkt_params(FileSystemPathPointer(path)))
        except LookupError as err:
            raise PreprocessError(f"{path}: not a punkt_tab model directory ({err})") from None
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
    return PunktSentenceTokenizer(params)


def sentence_of_tokens(splitter: PunktSentenceTokenizer, text: str, token_starts: List[int]) -> List[int]:
    """Sentence number (0-based) of each token of ``text``, given the character
    offset where each token starts. Tokens never straddle sentences: a token
    belongs to the sentence in which it starts."""
    boundaries = [start for start, _ in splitter.span_tokenize(text)][1:]
    if not boundaries:
        return [0] * len(token_starts)
    return [bisect.bisect_right(boundaries, start) for start in token_starts]
