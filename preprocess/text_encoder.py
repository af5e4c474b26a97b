"""Raw text -> items, exactly as ``segatron-preprocess`` binarized a corpus:
the directory's own sentence splitter (checked against the sha256 it
recorded), sub-word model, dictionary and stream style, through the same
readers, segmenter and indexer (``document_items.items``). For scoring and
generating with a model trained on that corpus."""
import os
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from . import sentences, subwords, units
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
from .document_items import Segmenter, Stats, items
from .generation_indexer import GenerationIndexer


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

    @property
    def raw_text_format(self) -> str:
        """How raw text is read: as the corpus's files, when they were ``wikitext`` or ``lines``; else ``lines``."""
        return self.input_format if self.input_format != "jsonl" else "lines"

    def encode(self, text: str, input_format: Optional[str] = None) -> EncodedText:
        """``text`` as a file of ``input_format`` (default: ``raw_text_format``)."""
        input_format = input_format or self.raw_text_format
        stream = units.read_text_units(text, input_format)
        found = list(items(stream, self.dictionary, self.segmenter, self.stream_style, Stats()))
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

    def symbol_text(self, token: int) -> str:
        """The text token id ``token`` writes in place of a ``<mask>``: its
        symbol without the sub-word marker (``\u2581the`` -> ``the``)."""
        return self.segmenter.subwords.symbol_text(self.dictionary[token])

    def generation_indexer(self) -> GenerationIndexer:
        """A ``GenerationIndexer`` of this corpus's splitter, sub-words and dictionary."""
        return GenerationIndexer(self.segmenter, self.dictionary, self.dictionary.eos())
