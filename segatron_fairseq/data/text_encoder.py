"""Tokenize raw text the way a ``segatron-preprocess`` corpus was tokenized:
with its ``sentencepiece.model`` when it has one, else by whitespace."""
import os
from typing import Callable, List

import sentencepiece as spm
from fairseq.data import Dictionary
from segatron_preprocess.corpus_format import SENTENCEPIECE_FILE


def text_encoder(corpus_dir: str, dictionary: Dictionary) -> Callable[[str], List[int]]:
    model_path = os.path.join(corpus_dir, SENTENCEPIECE_FILE)
    if os.path.isfile(model_path):
        processor = spm.SentencePieceProcessor(model_file=model_path)
        return lambda text: [dictionary.index(piece) for piece in processor.encode(text, out_type=str)]
    return lambda text: [dictionary.index(word) for word in text.split()]
