"""A Hugging Face tokenizer (remote code of a ``segatron-export`` directory)
that lays raw text out as segatron-fairseq does, segment indexes included.

Raw text goes through segatron-preprocess's own path, whose modules are
shipped beside this file (``units``, ``document_items``, ``indexer``,
``sentences``, ``subwords``): lines are paragraphs, the corpus's Punkt
parameters (``punkt.json``) and rules split them into sentences, the corpus's
sub-words (``sentencepiece.model``, ``wordpiece-vocab.txt`` or whitespace
words) cut the sentences, and each symbol takes its id in the model's
dictionary (``vocab.txt``). Three layouts (``layout`` in tokenizer_config.json):

- ``encoder`` (SegaBERT, as ``SegaBERTModel.encode``): ``<s> text </s>`` with
  ``paragraph_index``, ``sentence_index``, ``token_index`` (``</s>`` of
  paragraphs left out, [CLS] / [SEP] with their neighbours' indexes, indexes
  fitted to the tables, ``segments.layout_of_run``); a pair ``<s> a </s> b
  </s>`` with paragraph and token type = the text's number
  (``segments.layout_of_paragraphs``). Text longer than the model reads is cut.
- ``stream`` (Segatron-XL, as its hub's prompts): ``</s>`` then the text's
  tokens, with ``sentence_starts`` and ``paragraph_starts`` (1 at a token
  that starts a sentence / paragraph); a paragraph's ``</s>`` is kept, the
  last one only when the text ends with a line break.
- ``sequence`` (Cross-Thought, as its hub's ``encode``): the text's sub-words
  alone (no special tokens, no sentence split; ``<unk>`` for an empty text),
  cut to the model's length; the model adds its N special tokens.

    tokenizer("First sentence . Second one .\\nA new paragraph .")
    {'input_ids': [...], 'paragraph_index': [0, 0, ..., 1, 1], 'sentence_index': [0, ..., 1, ..., 0], ...}

``tokenize`` / ``encode`` give the sub-words of a text without that layout.
"""
import json
import os
import shutil
from types import SimpleNamespace
from typing import Dict, List, Optional, Tuple

import numpy as np
from transformers import BatchEncoding, PreTrainedTokenizer

from .corpus_format import INDEX_NAMES, paragraph_starts, sentence_starts
from .document_items import Segmenter, Stats, items
from .layout import layout_of_paragraphs, layout_of_run
from .sentences import load_params, params_from_json
from .subwords import SentencePiece, WordPiece, Words
from .units import normalize, read_text_units

# transformers 4.35.2 copies from a local directory only the files this module imports relatively, not the files
# those import: each module the ones above import is imported here too, so that it is copied
from .atomic import atomic_path  # noqa: F401,E402  isort: skip
from .errors import PreprocessError  # noqa: F401,E402  isort: skip
from .indexer import DocumentIndexer  # noqa: F401,E402  isort: skip
from .levels import fit_to_table  # noqa: F401,E402  isort: skip

# transformers checks the imports of this file alone before it runs it: the packages the shipped modules
# import that transformers does not itself require (sentences: nltk, when called; subwords:
# sentencepiece) are imported here, so that a missing one is named before anything runs
from nltk import tokenize  # noqa: F401,E402  isort: skip
from sentencepiece import SentencePieceProcessor  # noqa: F401,E402  isort: skip

ENCODER_KEYS = ("paragraph_index", "sentence_index", "token_index")
STREAM_KEYS = ("sentence_starts", "paragraph_starts")
# options of transformers' tokenizers that change nothing here (the layout holds its own special tokens)
_IGNORED_OPTIONS = {"verbose", "add_special_tokens"}


class SegmentIndexTokenizer(PreTrainedTokenizer):
    vocab_files_names = {"vocab_file": "vocab.txt", "punkt_file": "punkt.json",
                         "sentencepiece_model_file": "sentencepiece.model",
                         "wordpiece_vocab_file": "wordpiece-vocab.txt"}

    def __init__(self, vocab_file, punkt_file=None, sentencepiece_model_file=None, wordpiece_vocab_file=None,
                 subwords="none", cased=False, stream_style="fairseq", input_format="lines", layout="encoder",
                 index_table_sizes=None, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                 mask_token="<mask>", **kwargs):
        if layout not in ("encoder", "stream", "sequence"):
            raise ValueError(f"layout {layout!r}: the tokenizer lays text out for an 'encoder', a 'stream' or a "
                             "'sequence'")
        with open(vocab_file, encoding="utf-8") as f:
            self.symbols = [line.rstrip("\n") for line in f if line.strip()]
        self.ids = {symbol: i for i, symbol in enumerate(self.symbols)}
        if mask_token not in self.ids:
            mask_token = None  # a dictionary without <mask> (a causal LM's)
        # a sequence is cut into sub-words as Cross-Thought's hub cuts it: a literal <mask> too
        keep = (mask_token,) if mask_token is not None and layout != "sequence" else ()
        if subwords == "sentencepiece":
            pieces = SentencePiece(sentencepiece_model_file, keep)
        elif subwords == "wordpiece":
            pieces = WordPiece(wordpiece_vocab_file, cased, keep)
        else:
            pieces = Words()
        splitter = None  # a sequence is not split into sentences
        if punkt_file is not None:
            with open(punkt_file, encoding="utf-8") as f:
                splitter = load_params(params_from_json(json.load(f)))
        self.segmenter = Segmenter(splitter, pieces, split_headings=stream_style == "authors")
        self.files = {"vocab.txt": vocab_file, "punkt.json": punkt_file,
                      "sentencepiece.model": sentencepiece_model_file, "wordpiece-vocab.txt": wordpiece_vocab_file}
        self.settings = {"subwords": subwords, "cased": cased, "stream_style": stream_style,
                         "input_format": input_format, "layout": layout, "index_table_sizes": index_table_sizes}
        for alias in ("cls_token", "sep_token"):  # <s> and </s> again, as save_pretrained wrote them
            kwargs.pop(alias, None)
        super().__init__(bos_token=bos_token, cls_token=bos_token, eos_token=eos_token, sep_token=eos_token,
                         pad_token=pad_token, unk_token=unk_token, mask_token=mask_token, subwords=subwords,
                         cased=cased, stream_style=stream_style, input_format=input_format, layout=layout,
                         index_table_sizes=index_table_sizes, **kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def get_vocab(self) -> Dict[str, int]:
        return dict(self.ids)

    def _tokenize(self, text: str) -> List[str]:
        text = normalize(text)
        return self.segmenter.subwords.encode(text) if text else []

    def _convert_token_to_id(self, token: str) -> int:
        return self.ids.get(token, self.ids[self.unk_token])

    def _convert_id_to_token(self, index: int) -> str:
        return self.symbols[index]

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        return self.segmenter.subwords.detokenize(tokens)

    def _decode(self, token_ids, *args, **kwargs) -> str:
        """The text of ``token_ids``. In the stream layout, ids that do not open
        a stream (their first is not its leading ``</s>``) continue a text: when
        they begin with a word, their text begins with the space before it, so
        that a prompt followed by the decoded new tokens (transformers 5's
        text-generation pipeline) reads as the whole sequence decoded."""
        text = super()._decode(token_ids, *args, **kwargs)
        ids = [token_ids] if isinstance(token_ids, int) else list(token_ids)
        if self.settings["layout"] != "stream" or not ids or ids[0] == self.eos_token_id or not text \
                or text[0].isspace():
            return text
        special = set(self.all_special_ids)  # (a property rebuilt at each reading)
        first = next((i for i in ids if i not in special), None)
        if first is not None and self.segmenter.subwords.begins_word(self._convert_id_to_token(first)):
            return " " + text
        return text

    def build_inputs_with_special_tokens(self, token_ids_0: List[int],
                                         token_ids_1: Optional[List[int]] = None) -> List[int]:
        if self.settings["layout"] != "encoder":
            if token_ids_1 is not None:
                raise ValueError(f"a {self.settings['layout']} layout reads one text, not a pair")
            return [self.eos_token_id] + token_ids_0 if self.settings["layout"] == "stream" else token_ids_0
        first = [self.bos_token_id] + token_ids_0 + [self.eos_token_id]
        return first if token_ids_1 is None else first + token_ids_1 + [self.eos_token_id]

    def _items(self, text: str):
        """The items of ``text`` read as a file of the corpus's format, as the binarizer writes them."""
        dictionary = SimpleNamespace(indices=self.ids, unk_index=self.unk_token_id, eos_index=self.eos_token_id)
        found = list(items(read_text_units(text, self.settings["input_format"]), dictionary, self.segmenter,
                           self.settings["stream_style"], Stats()))
        if not found:
            raise ValueError(f"the text holds no words: {text[:80]!r}")
        return found

    def _encoder_layout(self, text: str, text_pair: Optional[str], max_length: int) -> Dict[str, List[int]]:
        sizes = self.settings["index_table_sizes"]
        if text_pair is None:
            found = self._items(text)
            tokens = np.concatenate([item.ids for item in found]).astype(np.int64)
            indexes = {name: np.concatenate([getattr(item, name) for item in found]).astype(np.int64)
                       for name in INDEX_NAMES}
            layout = layout_of_run(tokens, indexes, self.bos_token_id, self.eos_token_id, max_length, sizes)
            columns = {"input_ids": layout.tokens, "token_type_ids": layout.token_type,
                       **{f"{name}_index": layout.indexes[name] for name in INDEX_NAMES}}
            return {key: np.asarray(values).tolist() for key, values in columns.items()}
        texts = [[i for item in self._items(t) for i in item.ids if i != self.eos_token_id] for t in (text, text_pair)]
        layout = layout_of_paragraphs(texts, self.bos_token_id, self.eos_token_id, max_length, sizes["token"])
        return {"input_ids": layout.tokens, "token_type_ids": layout.paragraph, "paragraph_index": layout.paragraph,
                "sentence_index": layout.sentence, "token_index": layout.token}

    def _stream_layout(self, text: str) -> Dict[str, List[int]]:
        found = self._items(text)
        tokens = [i for item in found for i in item.ids]
        token_index, sentence_index = (np.concatenate([getattr(item, name) for item in found])
                                       for name in ("token", "sentence"))
        keep = len(tokens) if text.endswith("\n") else len(tokens) - 1
        return {"input_ids": [self.eos_token_id] + tokens[:keep],
                "sentence_starts": [1] + sentence_starts(token_index)[:keep].astype(int).tolist(),
                "paragraph_starts": [1] + paragraph_starts(token_index, sentence_index)[:keep].astype(int).tolist()}

    def __call__(self, text, text_pair=None, padding=False, truncation=None, max_length=None, return_tensors=None,
                 return_attention_mask=None, return_token_type_ids=None, return_special_tokens_mask=False,
                 pad_to_multiple_of=None, **kwargs) -> BatchEncoding:
        """The layout of a text or a pair (lists of them for a batch); keys as
        the module doc says, with ``attention_mask`` (and ``token_type_ids``
        for the encoder layout). ``max_length`` (unless ``truncation`` is
        False) shortens an encoder layout or a sequence below the model's
        length, the longest text of a pair first; a stream is never cut.
        ``padding`` pads every key (the indexes with 0), on ``padding_side``.
        Options it cannot honour (offsets, overflowing windows, words given
        pre-split, other truncation strategies) are refused."""
        unknown = {key for key, value in kwargs.items() if key not in _IGNORED_OPTIONS and value not in (None, False)}
        if unknown:
            raise TypeError(f"{type(self).__name__} does not take {', '.join(sorted(unknown))}")
        batched = isinstance(text, (list, tuple))
        texts = list(text) if batched else [text]
        if text_pair is not None and isinstance(text_pair, (list, tuple)) != batched:
            raise TypeError("text and text_pair must both be strings or both lists of strings")
        pairs = (list(text_pair) if batched else [text_pair]) if text_pair is not None else [None] * len(texts)
        if len(pairs) != len(texts) or not all(isinstance(t, str) for t in texts) or \
                not all(p is None or isinstance(p, str) for p in pairs):
            raise TypeError("text (and text_pair) must be a string or a list of strings of equal lengths")
        if truncation not in (None, False, True, "do_not_truncate", "longest_first"):
            raise ValueError(f"truncation={truncation!r}: the layout shortens the longest text (longest_first)")
        limit = self.model_max_length
        if max_length is not None and truncation not in (False, "do_not_truncate"):
            if self.settings["layout"] == "stream":
                raise ValueError("a stream is not cut: read a long text in segments, with the memory")
            limit = min(limit, max_length)
        rows = []
        for first, second in zip(texts, pairs):
            layout = self.settings["layout"]
            if layout != "encoder" and second is not None:
                raise ValueError(f"a {layout} layout reads one text, not a pair")
            if layout == "stream":
                row = self._stream_layout(first)
            elif layout == "sequence":
                row = {"input_ids": self.convert_tokens_to_ids(self._tokenize(first))[:limit] or [self.unk_token_id]}
            else:
                row = self._encoder_layout(first, second, limit)
            if return_token_type_ids is False:
                row.pop("token_type_ids", None)
            if return_special_tokens_mask:
                row["special_tokens_mask"] = self.get_special_tokens_mask(row["input_ids"],
                                                                          already_has_special_tokens=True)
            rows.append(row)
        encoded = {key: [row[key] for row in rows] for key in rows[0]} if batched else rows[0]
        side = {"padding_side": kwargs["padding_side"]} if kwargs.get("padding_side") else {}  # transformers 5's
        padded = self.pad(encoded, padding=padding, max_length=max_length, pad_to_multiple_of=pad_to_multiple_of,
                          return_attention_mask=return_attention_mask, **side)
        # one text with return_tensors: a batch of one, (1, T), as transformers' tokenizers give it
        return BatchEncoding(dict(padded), tensor_type=return_tensors, prepend_batch_axis=not batched)

    def _pad(self, encoded_inputs, max_length=None, padding_strategy="do_not_pad", pad_to_multiple_of=None,
             return_attention_mask=None, **kwargs):
        """transformers' padding of its own keys, then the layout's keys padded with 0 on the same side."""
        length = len(encoded_inputs["input_ids"])
        encoded_inputs = super()._pad(encoded_inputs, max_length=max_length, padding_strategy=padding_strategy,
                                      pad_to_multiple_of=pad_to_multiple_of,
                                      return_attention_mask=return_attention_mask, **kwargs)
        missing = len(encoded_inputs["input_ids"]) - length
        side = kwargs.get("padding_side") or self.padding_side
        for key in ENCODER_KEYS + STREAM_KEYS:
            if key in encoded_inputs and missing > 0:
                values = list(encoded_inputs[key])
                encoded_inputs[key] = values + [0] * missing if side == "right" else [0] * missing + values
        return encoded_inputs

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        paths = []
        for name, source in self.files.items():
            if source is None:
                continue
            path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "") + name)
            if os.path.abspath(path) != os.path.abspath(source):
                shutil.copyfile(source, path)
            paths.append(path)
        return tuple(paths)
