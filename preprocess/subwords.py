"""Sub-word segmentation of sentences: none (whitespace words), sentencepiece,
or WordPiece (a BERT ``vocab.txt``, through the ``tokenizers`` library)."""
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

    @staticmethod
    def begins_word(symbol: str) -> bool:
        return True

    @staticmethod
    def symbol_text(symbol: str) -> str:
        """The text ``symbol`` writes in place of a ``<mask>``: the word itself."""
        return symbol


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

    @staticmethod
    def begins_word(piece: str) -> bool:
        return piece.startswith("\u2581")

    @staticmethod
    def symbol_text(piece: str) -> str:
        """The text ``piece`` writes in place of a ``<mask>``, its word marker
        left out: ``\u2581the`` -> ``the``, ``ster`` -> ``ster``."""
        return piece.replace("\u2581", " ").strip()

    @property
    def vocab_size(self) -> int:
        return self.processor.GetPieceSize()

    def encode(self, text: str) -> List[str]:
        return _encode_keeping(text, self.keep, self.processor.EncodeAsPieces)


class WordPiece:
    """``--bpe wordpiece``: BERT's tokenization with a ``vocab.txt`` (its
    normalizer, lower-casing and accent stripping unless ``cased``, its split
    at white space and punctuation, then the longest pieces of the vocabulary;
    a word continues in pieces that start with ``##``)."""

    is_whitespace = False

    def __init__(self, vocab_path: str, cased: bool, keep: Tuple[str, ...] = ()):
        from tokenizers import Tokenizer, normalizers, pre_tokenizers
        from tokenizers.models import WordPiece as WordPieceModel

        if not os.path.isfile(vocab_path):
            raise PreprocessError(f"{vocab_path}: WordPiece vocabulary not found")
        self.vocab_path, self.cased, self.keep = vocab_path, cased, tuple(keep)
        try:
            model = WordPieceModel.from_file(vocab_path, unk_token="[UNK]")
        except Exception as err:  # tokenizers raises its own Exception type
            raise PreprocessError(f"{vocab_path}: not a WordPiece vocabulary ({err})") from None
        self.tokenizer = Tokenizer(model)
        self.tokenizer.normalizer = normalizers.BertNormalizer(lowercase=not cased)
        self.tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()

    def __getstate__(self):
        return {"vocab_path": self.vocab_path, "cased": self.cased, "keep": self.keep}

    def __setstate__(self, state):
        self.__init__(state["vocab_path"], state["cased"], state["keep"])

    @staticmethod
    def words_of(pieces: List[str]) -> Optional[List[str]]:
        """The words of a paragraph's pieces (``##`` pieces joined to the one before)."""
        words: List[str] = []
        for piece in pieces:
            if piece.startswith("##") and words:
                words[-1] += piece[2:]
            else:
                words.append(piece)
        return words

    @staticmethod
    def detokenize(pieces: List[str]) -> str:
        return " ".join(pieces).replace(" ##", "")

    @staticmethod
    def begins_word(piece: str) -> bool:
        return not piece.startswith("##")

    @staticmethod
    def symbol_text(piece: str) -> str:
        """The text ``piece`` writes in place of a ``<mask>``, its word marker
        left out: ``##ster`` -> ``ster``."""
        return piece[2:] if piece.startswith("##") else piece

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> List[str]:
        return _encode_keeping(text, self.keep,
                               lambda part: self.tokenizer.encode(part, add_special_tokens=False).tokens)


def _encode_keeping(text: str, keep: Tuple[str, ...], encode) -> List[str]:
    """``encode(text)``, except that each symbol of ``keep`` stays one token."""
    if not keep:
        return encode(text)
    pieces = []
    for part in re.split("(" + "|".join(re.escape(k) for k in keep) + ")", text):
        if part in keep:
            pieces.append(part)
        elif part.strip():
            pieces.extend(encode(part))
    return pieces


def of_corpus(directory: str, metadata: dict, keep: Tuple[str, ...] = ()):
    """The sub-words a ``segatron-preprocess`` directory was binarized with
    (``metadata``: its ``segatron_preprocess.json``; a directory without one
    holds a sentencepiece model or whitespace words)."""
    from .corpus_format import BPE, BPE_CASED, SENTENCEPIECE_FILE, WORDPIECE, WORDPIECE_FILE

    if metadata.get(BPE) == WORDPIECE:
        return WordPiece(os.path.join(directory, WORDPIECE_FILE), metadata.get(BPE_CASED, False), keep)
    sentencepiece_model = os.path.join(directory, SENTENCEPIECE_FILE)
    if os.path.isfile(sentencepiece_model) or metadata.get(BPE, "none") != "none":
        return SentencePiece(sentencepiece_model, keep)
    return Words()


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
