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

Punkt runs without NLTK's wall-clock limit on its regular expressions
(``_without_time_limit``), so a paragraph of any length splits the same way on
every run, however loaded the machine. A ``punkt_tab`` directory is written and
read here with NLTK's own encoder and decoder of its files, not through NLTK's
data paths, which refuse some names a destination may have (a line break).

This module imports the standard library and, when called, NLTK:
``segatron-export`` ships it with the tokenizers that compute segment indexes.
"""
import bisect
import contextlib
import hashlib
import json
import os
import string
import threading
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


# NLTK's punkt_tab format: a file per kind of parameter
COLLOCATIONS, SENT_STARTERS, ABBREV_TYPES, ORTHO_CONTEXT = (
    "collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab")
_TIME_LIMIT = threading.Lock()  # held while NLTK's time limit is lifted


@contextlib.contextmanager
def _without_time_limit():
    """NLTK's regular expressions without its wall-clock limit
    (``nltk.redos.DEFAULT_TIMEOUT``, 5 s a call, in the NLTK releases that have
    one). Punkt's patterns are NLTK's own, and its time grows linearly with the
    text; under the limit, whether a long paragraph splits would depend on the
    machine's load. The limit is NLTK's one setting for the whole process:
    it is lifted for one block at a time (other threads' NLTK calls meanwhile
    run without it too) and put back after."""
    try:
        from nltk import redos
    except ImportError:  # an NLTK without the limit
        yield
        return
    with _TIME_LIMIT:
        limit = redos.DEFAULT_TIMEOUT
        redos.DEFAULT_TIMEOUT = None
        try:
            yield
        finally:
            redos.DEFAULT_TIMEOUT = limit


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
            with _without_time_limit():
                trainer.train("\n".join(buffer), finalize=False)
            total += size
            buffer, size = [], 0
        if total + size >= max_chars:
            break
    with _without_time_limit():
        if buffer:
            trainer.train("\n".join(buffer), finalize=False)
        trainer.finalize_training()
    params = trainer.get_params()
    params.abbrev_types |= SEED_ABBREVIATIONS
    return params


def save(params, directory: str) -> None:
    """Write ``params`` to ``directory`` in the punkt_tab format, atomically
    (each file's lines sorted, so the same parameters make the same files)."""
    from nltk.tabdata import TabEncoder

    encoder = TabEncoder()
    texts = {COLLOCATIONS: encoder.tups2tab(sorted(params.collocations)),
             SENT_STARTERS: encoder.set2txt(sorted(params.sent_starters)),
             ABBREV_TYPES: encoder.set2txt(sorted(params.abbrev_types)),
             ORTHO_CONTEXT: encoder.ivdict2tab(dict(sorted(params.ortho_context.items())))}
    with atomic_path(directory) as tmp:
        os.makedirs(tmp)
        for name, text in texts.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="") as f:
                f.write(text)


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
    from nltk.tabdata import PunktDecoder
    from nltk.tokenize.punkt import PunktParameters

    def lines(name):
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            return list(f)

    decoder = PunktDecoder()
    params = PunktParameters()
    try:
        params.collocations = set(decoder.tab2tups(lines(COLLOCATIONS)))
        params.sent_starters = decoder.txt2set(lines(SENT_STARTERS))
        params.abbrev_types = decoder.txt2set(lines(ABBREV_TYPES))
        params.ortho_context = decoder.tab2intdict(lines(ORTHO_CONTEXT))
    except (OSError, ValueError) as err:
        raise PreprocessError(f"{directory}: not a punkt_tab model directory ({err})") from None
    return params


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
    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would wait for a writer
        raise PreprocessError(f"{path}: not a Punkt model (a punkt_tab directory or a punkt.json file)")
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
    with _without_time_limit():
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
