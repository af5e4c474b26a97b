"""Tokenize raw text the way a ``segatron-preprocess`` corpus was tokenized:
with its ``sentencepiece.model`` when it has one, else by whitespace (the
binarizer's own ``subwords``; no sentence splitting, which fine-tuning texts
do not need)."""
import os
from typing import Callable, List

from fairseq.data import Dictionary
from segatron_preprocess import subwords
from segatron_preprocess.corpus_format import SENTENCEPIECE_FILE


def text_encoder(corpus_dir: str, dictionary: Dictionary) -> Callable[[str], List[int]]:
    model_path = os.path.join(corpus_dir, SENTENCEPIECE_FILE)
    words = subwords.SentencePiece(model_path) if os.path.isfile(model_path) else subwords.Words()

    def encode(text: str) -> List[int]:
        normalized = " ".join(text.split())
        return [dictionary.index(symbol) for symbol in words.encode(normalized)] if normalized else []

    return encode
