"""Sentence and paragraph starts of generated tokens.

This module and the ones it imports need no fairseq and no torch:
``segatron-export`` ships them with Segatron-XL, whose ``generate()`` flags
each new token as fairseq's sampling does.
"""
from typing import List, Sequence, Tuple

from .document_items import Segmenter
from .sentences import sentence_numbers


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

    def __init__(self, segmenter: Segmenter, symbols: Sequence[str], eos: int):
        """``symbols``: token id -> symbol (a fairseq ``Dictionary``, or a
        list); ``eos``: the id of ``</s>``."""
        self.segmenter, self.symbols, self.eos = segmenter, symbols, eos
        self.paragraph: List[str] = []  # symbols of the current paragraph
        self.sentences_seen = 0  # sentences of the current paragraph already flagged
        self.after_eos = True

    def copy(self) -> "GenerationIndexer":
        """An indexer in the same state, that goes on independently (a beam that forks)."""
        twin = GenerationIndexer(self.segmenter, self.symbols, self.eos)
        twin.paragraph, twin.sentences_seen, twin.after_eos = list(self.paragraph), self.sentences_seen, self.after_eos
        return twin

    def push(self, token: int) -> Tuple[bool, bool]:
        """(sentence start, paragraph start) of ``token``, the next token of the stream."""
        if token == self.eos:
            self.after_eos = True
            return False, False
        if self.after_eos:
            self.after_eos = False
            self.paragraph, self.sentences_seen = [self.symbols[token]], 0
            return True, True
        self.paragraph.append(self.symbols[token])
        words = self.segmenter.subwords.words_of(self.paragraph)
        if words is None:  # a piece inside a word
            return False, False
        sentences_now = sentence_numbers(self.segmenter.splitter, words)[-1]
        if sentences_now > self.sentences_seen:
            self.sentences_seen = sentences_now
            return True, False
        return False, False
