"""The sub-words of a segatron-preprocess corpus binarized with ``--bpe
sentencepiece``, as a Hugging Face tokenizer (remote code of a
``segatron-export`` directory): white space collapsed, the corpus's
sentencepiece model cuts the text into pieces, and each piece takes its id in
the model's dictionary (``vocab.txt``, one symbol a line; ``<unk>`` for a
piece the dictionary lacks), as segatron-fairseq's own text encoder does.
Special tokens are fairseq's: ``<s>`` text ``</s>`` (a pair: ``<s>`` a ``</s>`` b ``</s>``).
"""
import os
import shutil
from typing import Dict, List, Optional, Tuple

from transformers import PreTrainedTokenizer


class SegatronSentencePieceTokenizer(PreTrainedTokenizer):
    vocab_files_names = {"vocab_file": "vocab.txt", "sentencepiece_model_file": "sentencepiece.model"}
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]

    def __init__(self, vocab_file, sentencepiece_model_file, cls_token="<s>", sep_token="</s>", pad_token="<pad>",
                 unk_token="<unk>", mask_token="<mask>", **kwargs):
        import sentencepiece

        with open(vocab_file, encoding="utf-8") as f:
            self.symbols = [line.rstrip("\n") for line in f if line.strip()]
        self.ids = {symbol: i for i, symbol in enumerate(self.symbols)}
        self.vocab_file, self.sentencepiece_model_file = vocab_file, sentencepiece_model_file
        self.processor = sentencepiece.SentencePieceProcessor(model_file=sentencepiece_model_file)
        super().__init__(cls_token=cls_token, bos_token=cls_token, sep_token=sep_token, eos_token=sep_token,
                         pad_token=pad_token, unk_token=unk_token, mask_token=mask_token, **kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def get_vocab(self) -> Dict[str, int]:
        return dict(self.ids)

    def _tokenize(self, text: str) -> List[str]:
        text = " ".join(text.split())
        return self.processor.encode(text, out_type=str) if text else []

    def _convert_token_to_id(self, token: str) -> int:
        return self.ids.get(token, self.ids[self.unk_token])

    def _convert_id_to_token(self, index: int) -> str:
        return self.symbols[index]

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        return self.processor.decode_pieces(tokens)

    def build_inputs_with_special_tokens(self, token_ids_0: List[int],
                                         token_ids_1: Optional[List[int]] = None) -> List[int]:
        first = [self.cls_token_id] + token_ids_0 + [self.sep_token_id]
        return first if token_ids_1 is None else first + token_ids_1 + [self.sep_token_id]

    def create_token_type_ids_from_sequences(self, token_ids_0: List[int],
                                             token_ids_1: Optional[List[int]] = None) -> List[int]:
        first = [0] * (len(token_ids_0) + 2)
        return first if token_ids_1 is None else first + [1] * (len(token_ids_1) + 1)

    def get_special_tokens_mask(self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None,
                                already_has_special_tokens: bool = False) -> List[int]:
        if already_has_special_tokens:
            return super().get_special_tokens_mask(token_ids_0, token_ids_1, already_has_special_tokens=True)
        first = [1] + [0] * len(token_ids_0) + [1]
        return first if token_ids_1 is None else first + [0] * len(token_ids_1) + [1]

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, str]:
        paths = []
        for name, source in (("vocab.txt", self.vocab_file), ("sentencepiece.model", self.sentencepiece_model_file)):
            path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "") + name)
            if os.path.abspath(path) != os.path.abspath(source):
                shutil.copyfile(source, path)
            paths.append(path)
        return tuple(paths)
