"""Tokenize raw text the way a ``segatron-preprocess`` corpus was tokenized:
with its sentencepiece model or WordPiece vocabulary, else by whitespace (the
binarizer's own ``subwords``; no sentence splitting, which fine-tuning texts
do not need)."""
from typing import Callable, List

from fairseq.data import Dictionary

from segatron_preprocess import subwords
from segatron_preprocess.corpus_format import read_metadata


def text_encoder(corpus_dir: str, dictionary: Dictionary) -> Callable[[str], List[int]]:
    words = subwords.of_corpus(corpus_dir, read_metadata(corpus_dir))

    def encode(text: str) -> List[int]:
        normalized = " ".join(text.split())
        return [dictionary.index(symbol) for symbol in words.encode(normalized)] if normalized else []

    return encode
