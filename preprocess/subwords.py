"""Sub-word segmentation of sentences: none (whitespace words) or sentencepiece."""
import os
import re
from typing import Iterable, List, Optional, Tuple

import sentencepiece as spm

from .atomic import atomic_path
from .errors import PreprocessError


DEFAULT_VOCAB_SIZE = 32000


class Words:
    """``--bpe none``: the whitespace tokens fairseq-preprocess would use."""

    is_whitespace = True

    def encode(self, text: str) -> List[str]:
        return text.split(" ")

    @staticmethod
    def words_of(symbols: List[str]) -> Optional[List[str]]:
        """The words of a paragraph's symbols (they are words)."""
        return symbols

    @staticmethod
    def detokenize(symbols: List[str]) -> str:
        return " ".join(symbols)


class SentencePiece:
    """``--bpe sentencepiece``: the pieces of a sentencepiece model."""

    is_whitespace = False

    def __init__(self, model_path: str, keep: Tuple[str, ...] = ()):
        """``keep``: symbols (e.g. ``<mask>``) that stay one piece wherever they occur."""
        self.keep = tuple(keep)
        if not os.path.isfile(model_path):
            raise PreprocessError(f"{model_path}: sentencepiece model not found")
        self.model_path = model_path
        self.processor = spm.SentencePieceProcessor()
        try:
            self.processor.Load(model_path)
        except (OSError, RuntimeError) as err:
            raise PreprocessError(f"{model_path}: not a sentencepiece model ({err})") from None

    def __getstate__(self):
        return {"model_path": self.model_path, "keep": self.keep}

    def __setstate__(self, state):
        self.__init__(state["model_path"], state["keep"])

    @staticmethod
    def words_of(pieces: List[str]) -> Optional[List[str]]:
        """The whitespace words of a paragraph's pieces, or None when the last
        piece continues a word (a sentence cannot start inside a word)."""
        if len(pieces) > 1 and not pieces[-1].startswith("\u2581"):
            return None
        return "".join(pieces).replace("\u2581", " ").split()

    def detokenize(self, pieces: List[str]) -> str:
        return self.processor.DecodePieces(pieces)

    @property
    def vocab_size(self) -> int:
        return self.processor.GetPieceSize()

    def encode(self, text: str) -> List[str]:
        if not self.keep:
            return self.processor.EncodeAsPieces(text)
        pieces = []
        for part in re.split("(" + "|".join(re.escape(k) for k in self.keep) + ")", text):
            if part in self.keep:
                pieces.append(part)
            elif part.strip():
                pieces.extend(self.processor.EncodeAsPieces(part))
        return pieces


def train_sentencepiece(sentences: Iterable[str], vocab_size: int, model_path: str, max_sentences: int) -> None:
    """Train a unigram sentencepiece model on up to ``max_sentences`` sentences
    (sampled by sentencepiece) and write it to ``model_path`` atomically."""
    with atomic_path(model_path) as tmp:
        try:
            _train(sentences, vocab_size, tmp, max_sentences)
        except RuntimeError as err:
            raise PreprocessError(f"sentencepiece training for {model_path} failed: {err}") from None
        os.replace(tmp + ".model", tmp)
        os.remove(tmp + ".vocab")


def _train(sentences: Iterable[str], vocab_size: int, prefix: str, max_sentences: int) -> None:
    """sentencepiece writes ``prefix.model`` and ``prefix.vocab``."""
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(sentences),
        model_prefix=prefix,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        input_sentence_size=max_sentences,
        shuffle_input_sentence=True,
        # fairseq's dictionary adds its own specials; keep spm's out of the text
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        minloglevel=2,
    )
