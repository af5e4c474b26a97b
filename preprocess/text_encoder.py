"""Raw text -> items, exactly as ``segatron-preprocess`` binarized a corpus:
the directory's own sentence splitter (checked against the sha256 it
recorded), sub-word model, dictionary and stream style, through the same
readers, segmenter and indexer (``binarize.items``). For scoring and
generating with a model trained on that corpus."""
import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from . import readers, sentences, subwords
from .binarize import Segmenter, Stats, items
from .corpus_format import (
    DICT_FILE,
    INPUT_FORMAT,
    LEGACY_PUNKT_FILE,
    METADATA_FILE,
    PUNKT_DIR,
    SENTENCE_SPLITTER,
    STREAM_STYLE,
    paragraph_starts,
    read_metadata,
    sentence_starts,
)


@dataclass
class EncodedText:
    """The flattened items of a text (eos after each), shapes (N,); the
    indexes mean what ``corpus_format`` says."""

    tokens: np.ndarray  # int64 token ids
    paragraph_index: np.ndarray
    sentence_index: np.ndarray
    token_index: np.ndarray

    @property
    def sentence_starts(self) -> np.ndarray:
        """bool, True where a token begins a sentence."""
        return sentence_starts(self.token_index)

    @property
    def paragraph_starts(self) -> np.ndarray:
        """bool, True where a token begins a paragraph."""
        return paragraph_starts(self.token_index, self.sentence_index)


def _splitter(directory: str, recorded) -> object:
    name = recorded.get("name") if isinstance(recorded, dict) else None
    if name == "punkt-pretrained":
        splitter = sentences.load_pretrained()
    elif name == "punkt-path" and os.path.exists(recorded.get("source", "")):
        splitter = sentences.load(recorded["source"])
    else:
        saved = sentences.saved_in(directory)
        if saved is None:
            raise FileNotFoundError(f"{directory} holds no sentence splitter ({PUNKT_DIR}/ or {LEGACY_PUNKT_FILE})")
        splitter = sentences.load(saved)
    if isinstance(recorded, dict) and sentences.splitter_identity(splitter)["sha256"] != recorded.get("sha256"):
        raise ValueError(f"{directory}: its sentence splitter is not the one {METADATA_FILE} records "
                         f"({recorded.get('name')}, sha256 {recorded.get('sha256', '')[:12]})")
    return splitter


class TextEncoder:
    def __init__(self, directory: str, dictionary=None, keep: tuple = ()):
        """``dictionary``: the model's (a fairseq ``Dictionary``); default the
        directory's dict.txt. ``keep``: symbols such as ``<mask>`` that stay
        one token."""
        metadata = read_metadata(directory)
        if not metadata:
            raise FileNotFoundError(f"{os.path.join(directory, METADATA_FILE)} not found: raw text is encoded as "
                                    f"segatron-preprocess encoded the corpus, which needs its metadata")
        if dictionary is None:
            from fairseq.data import Dictionary

            dictionary = Dictionary.load(os.path.join(directory, DICT_FILE))
        words = subwords.of_corpus(directory, metadata, keep)
        self.stream_style = metadata.get(STREAM_STYLE, "fairseq")
        self.input_format = metadata.get(INPUT_FORMAT, "lines")
        self.segmenter = Segmenter(_splitter(directory, metadata.get(SENTENCE_SPLITTER)), words,
                                   split_headings=self.stream_style == "authors")
        self.dictionary = dictionary

    def encode(self, text: str, input_format: Optional[str] = None) -> EncodedText:
        """``text`` as a file of ``input_format`` (default: the corpus's, when it
        was ``wikitext`` or ``lines``)."""
        input_format = input_format or (self.input_format if self.input_format != "jsonl" else "lines")
        units = readers.read_text_units(text, input_format)
        found = list(items(units, self.dictionary, self.segmenter, self.stream_style, Stats()))
        if not found:
            raise ValueError("the text holds no words")
        def flat(field):
            return np.concatenate([getattr(item, field) for item in found]).astype(np.int64)

        return EncodedText(flat("ids"), flat("paragraph"), flat("sentence"), flat("token"))

    def decode(self, tokens: List[int]) -> str:
        """Text of token ids: one line per ``</s>``-ended item, words joined by spaces."""
        lines, current = [], []
        for token in tokens:
            if token == self.dictionary.eos():
                lines.append(self.segmenter.subwords.detokenize(current))
                current = []
            else:
                current.append(self.dictionary[token])
        if current:
            lines.append(self.segmenter.subwords.detokenize(current))
        return "\n".join(lines)


class GenerationIndexer:
    """Sentence and paragraph starts of tokens that arrive one at a time (text
    being generated), by the rules the binarizer applies to whole paragraphs.

    A token's flags must be known when it is fed to the model, before the next
    token exists. So the rule is: a token starts a paragraph when it follows a
    ``</s>`` (and is not one); it starts a sentence when it starts a paragraph,
    or when the splitter, run on the current paragraph up to and including
    this token, puts a boundary right before it. A boundary that the splitter
    can place only after seeing a later token (before an opening quote, which
    it cannot tell from a closing one until the next word) is moved to the
    token that revealed it. With sub-words a boundary can fall only before a
    piece that begins a word.
    """

    def __init__(self, encoder: TextEncoder):
        self.encoder = encoder
        self.eos = encoder.dictionary.eos()
        self.paragraph: List[str] = []  # symbols of the current paragraph
        self.sentences_seen = 0  # sentences of the current paragraph already flagged
        self.after_eos = True

    def copy(self) -> "GenerationIndexer":
        """An indexer in the same state, that goes on independently (a beam that forks)."""
        twin = GenerationIndexer(self.encoder)
        twin.paragraph, twin.sentences_seen, twin.after_eos = list(self.paragraph), self.sentences_seen, self.after_eos
        return twin

    def push(self, token: int) -> Tuple[bool, bool]:
        """(sentence start, paragraph start) of ``token``, the next token of the stream."""
        if token == self.eos:
            self.after_eos = True
            return False, False
        if self.after_eos:
            self.after_eos = False
            self.paragraph, self.sentences_seen = [self.encoder.dictionary[token]], 0
            return True, True
        self.paragraph.append(self.encoder.dictionary[token])
        words = self.encoder.segmenter.subwords.words_of(self.paragraph)
        if words is None:  # a piece inside a word
            return False, False
        sentences_now = sentences.sentence_numbers(self.encoder.segmenter.splitter, words)[-1]
        if sentences_now > self.sentences_seen:
            self.sentences_seen = sentences_now
            return True, False
        return False, False
