"""Sentence splitting with NLTK Punkt.

Three sources of Punkt parameters:

- ``punkt-pretrained``: NLTK's English model (``punkt_tab``), when installed;
- ``punkt-trained``: Punkt trained unsupervised on the training split, saved
  in NLTK's own ``punkt_tab`` format (``save_punkt_params``) as ``punkt_tab/``
  in the destination directory and reused for the other splits;
- a path: a ``punkt_tab`` language directory (``.../punkt_tab/english``, or one
  written by this tool), or a ``punkt.json`` (``params_to_json``; written by
  segatron-preprocess 0.1.0, and by segatron-export beside a tokenizer).

Trained models are seeded with common English abbreviations (titles, months,
street and number abbreviations, initials), which a corpus like WikiText, whose
sentence-final periods are separate tokens, does not teach Punkt. Rules on top of
Punkt (``sentence_numbers``): WikiText's number markup (``@.@``, ``@,@``,
``@-@``) never starts or ends a sentence; a closing quote or bracket after a
sentence's final punctuation stays with that sentence (a quote closes when an
odd number of quotes precede it in the paragraph); titles such as Mr., Dr.,
St. and No. never end a sentence; and a sentence never starts with a
lower-case word or with , . ; : ? !
``splitter_identity`` names a splitter by a hash of its parameters and these
rules, so a directory records exactly which splitter made its indexes.

NLTK reads and writes model files only under the roots of ``nltk.data.path``;
``_nltk_may_use`` adds a directory to them for the duration of one call.

This module imports the standard library and, when called, NLTK:
``segatron-export`` ships it with the tokenizers that compute segment indexes.
"""
import bisect
import contextlib
import hashlib
import json
import os
import string
from typing import Dict, Iterable, List, Optional

from .atomic import atomic_path
from .corpus_format import LEGACY_PUNKT_FILE, PUNKT_DIR
from .errors import PreprocessError

RULES_VERSION = 1  # of the rules in sentence_numbers; part of a splitter's identity
WIKITEXT_MARKUP = frozenset({"@.@", "@,@", "@-@"})
TERMINALS = frozenset({".", "?", "!", "...", "...."})
# lower case, without the final period, as Punkt stores abbreviation types
SEED_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof rev st jr sr gen col lt capt sgt maj cmdr adm gov sen rep pres hon fr messrs "
    "co corp inc ltd bros no nos vs v vol pp fig ed eds approx dept est ft mt ave rd blvd "
    "jan feb mar apr jun jul aug sep sept oct nov dec a.m p.m e.g i.e u.s u.k d.c a.v".split()
) | frozenset(string.ascii_lowercase)  # initials


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
    params = trainer.get_params()
    params.abbrev_types |= SEED_ABBREVIATIONS
    return params


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


def saved_in(directory: str) -> Optional[str]:
    """The Punkt model a destination directory holds (punkt_tab/, else a 0.1.0 punkt.json), or None."""
    for name in (PUNKT_DIR, LEGACY_PUNKT_FILE):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    return None


def load_params(params):
    """A ``PunktSentenceTokenizer`` of ``params``."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(params)


def load(path: str):
    """A ``PunktSentenceTokenizer`` from a punkt_tab directory or a 0.1.0 ``punkt.json``."""
    return load_params(_load_punkt_tab(path) if os.path.isdir(path) else _load_legacy_json(path))


def _load_punkt_tab(directory: str):
    from nltk.data import FileSystemPathPointer
    from nltk.tokenize.punkt import load_punkt_params

    try:
        with _nltk_may_use(directory):
            return load_punkt_params(FileSystemPathPointer(os.path.abspath(directory)))
    except (LookupError, OSError, ValueError) as err:
        raise PreprocessError(f"{directory}: not a punkt_tab model directory ({err})") from None


def params_to_json(params) -> Dict:
    """Punkt parameters as JSON data, the layout of ``punkt.json`` (what
    ``segatron-export`` ships beside a tokenizer)."""
    return {"abbrev_types": sorted(params.abbrev_types),
            "collocations": sorted(list(pair) for pair in params.collocations),
            "sent_starters": sorted(params.sent_starters),
            "ortho_context": sorted(params.ortho_context.items())}


def params_from_json(data: Dict):
    """``PunktParameters`` of ``params_to_json``'s data."""
    from nltk.tokenize.punkt import PunktParameters

    params = PunktParameters()
    params.abbrev_types = set(data["abbrev_types"])
    params.collocations = {tuple(pair) for pair in data["collocations"]}
    params.sent_starters = set(data["sent_starters"])
    for word, flags in data["ortho_context"]:
        params.ortho_context[word] = flags
    return params


def _load_legacy_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return params_from_json(json.load(f))
    except FileNotFoundError:
        raise PreprocessError(f"{path}: Punkt model not found") from None
    except (ValueError, KeyError, TypeError) as err:
        raise PreprocessError(f"{path}: not a Punkt model written by segatron-preprocess ({err!r})") from None


def splitter_identity(splitter) -> Dict[str, str]:
    """``{"sha256": ...}`` of a Punkt tokenizer's parameters and RULES_VERSION:
    equal exactly when two splitters split every text the same way."""
    data = {"rules": RULES_VERSION, **params_to_json(splitter._params)}
    digest = hashlib.sha256(json.dumps(data, ensure_ascii=False).encode("utf-8")).hexdigest()
    return {"sha256": digest, "rules": str(RULES_VERSION)}


def sentence_of_tokens(splitter, text: str, token_starts: List[int]) -> List[int]:
    """Sentence number (0-based) of each token of ``text`` by Punkt alone,
    given the character offset where each token starts. Tokens never straddle
    sentences: a token belongs to the sentence in which it starts."""
    boundaries = [start for start, _ in splitter.span_tokenize(text)][1:]
    if not boundaries:
        return [0] * len(token_starts)
    return [bisect.bisect_right(boundaries, start) for start in token_starts]


CLOSERS = frozenset({'"', ")", "\u201d", "\u2019"})
# a sentence does not start with a lower-case word or with these
NO_START = frozenset({",", ".", ";", ":", "?", "!"})
# titles and number words that do not end a sentence even before a capitalized word
NEVER_FINAL = frozenset("mr mrs ms dr prof rev gen col lt capt sgt maj cmdr adm gov sen hon fr messrs no nos vs v st "
                        "mt ft".split())


def _sentence_start(words: List[str], start: int, quotes_before: List[int]) -> int:
    """Where a sentence that Punkt starts at ``start`` begins: right after the
    previous sentence's final punctuation and the closing quotes and brackets
    that follow it (a quote closes when an odd number of quotes precede it)."""
    end = start
    while end > 0 and words[end - 1] in CLOSERS:
        end -= 1
    if end == 0 or not (words[end - 1] in TERMINALS or words[end - 1].endswith(".")):
        return start
    while end < len(words) and words[end] in CLOSERS and (words[end] != '"' or quotes_before[end] % 2 == 1):
        end += 1
    return end


def sentence_numbers(splitter, words: List[str]) -> List[int]:
    """Sentence number (0-based) of each of ``words`` (a paragraph split on
    single spaces): Punkt, then the rules of this module."""
    starts, position = [], 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    numbers = sentence_of_tokens(splitter, " ".join(words), starts)
    quotes_before, quotes = [], 0
    for word in words:
        quotes_before.append(quotes)
        quotes += word == '"'
    boundaries = []
    for k in range(1, len(words)):
        if numbers[k] == numbers[k - 1]:
            continue
        start = _sentence_start(words, k, quotes_before)
        before = words[start - 1]
        if not WIKITEXT_MARKUP.isdisjoint((words[start] if start < len(words) else "", before)):
            continue
        if before.endswith(".") and before[:-1].lower() in NEVER_FINAL:
            continue
        if start < len(words) and (words[start][0].islower() or words[start] in NO_START):
            continue
        if 0 < start < len(words) and (not boundaries or start > boundaries[-1]):
            boundaries.append(start)
    sentence, result = 0, []
    for k in range(len(words)):
        if sentence < len(boundaries) and k == boundaries[sentence]:
            sentence += 1
        result.append(sentence)
    return result
