"""Tokenize raw text the way a ``segatron-preprocess`` corpus was tokenized:
with its ``sentencepiece.model`` when it has one, else by whitespace."""
import os
from typing import Callable, List

import sentencepiece as spm
from fairseq.data import Dictionary


def text_encoder(corpus_dir: str, dictionary: Dictionary) -> Callable[[str], List[int]]:
    model_path = os.path.join(corpus_dir, "sentencepiece.model")
    if os.path.isfile(model_path):
        processor = spm.SentencePieceProcessor(model_file=model_path)
        return lambda text: [dictionary.index(piece) for piece in processor.encode(text, out_type=str)]
    return lambda text: [dictionary.index(word) for word in text.split()]
