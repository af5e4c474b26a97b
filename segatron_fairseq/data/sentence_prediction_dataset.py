"""Classification / regression examples in SegaBERT's fine-tuning layout.

One text:  [CLS] a_1 .. a_n [SEP]            paragraph 0, sentence 0
Two texts: [CLS] a_1 .. a_n [SEP] b_1 .. b_m [SEP]
           a: paragraph 0, sentence 0;  b: paragraph 1, sentence 0
Token indexes count within each text from 0; [CLS] and [SEP] take the indexes
of their neighbouring token on the left ([CLS]: the first token's;
``segments.build_layout``). BERT's token type (segment A / B) is the text's
number, so it equals the paragraph index here and goes to the model as
``token_type``.
"""
from typing import List, Sequence, Tuple

import torch

from segatron_fairseq.segments import TABLE_SIZES, Text, build_layout, shorten_longest

from .example_list_dataset import ExampleListDataset, segment_net_input


def segment_layout(texts: Sequence[Sequence[int]], bos: int, eos: int, max_positions: int,
                   max_token_index: int) -> Tuple[List[int], List[int], List[int], List[int]]:
    """Token ids and (paragraph, sentence, token) indexes of one example. The
    longest text is shortened until the example fits ``max_positions``; token
    indexes above the table (``max_token_index`` rows) are clipped."""
    texts = shorten_longest(texts, max_positions - 1 - len(texts))
    layout = build_layout([Text(text, {"paragraph": [number] * len(text), "sentence": [0] * len(text),
                                       "token": range(len(text))}) for number, text in enumerate(texts)],
                          bos, eos, {**TABLE_SIZES, "token": max_token_index})
    return (layout.tokens.tolist(), layout.indexes["paragraph"].tolist(), layout.indexes["sentence"].tolist(),
            layout.indexes["token"].tolist())


class SentencePredictionDataset(ExampleListDataset):
    def __init__(self, examples: List[Tuple[List[int], List[int], List[int], List[int]]], targets: List,
                 pad: int, regression: bool):
        super().__init__([len(e[0]) for e in examples])
        self.examples, self.targets = examples, targets
        self.pad, self.regression = pad, regression

    def collater(self, indices):
        if not indices:
            return {}
        tokens, paragraph, sentence, token = zip(*(self.examples[i] for i in indices))
        net_input = segment_net_input(tokens, paragraph, sentence, token, paragraph, self.pad)
        dtype = torch.float if self.regression else torch.long
        return {
            "id": torch.tensor(indices),
            "nsentences": len(indices),
            "ntokens": int(net_input["src_tokens"].ne(self.pad).sum()),
            "net_input": net_input,
            "target": torch.tensor([self.targets[i] for i in indices], dtype=dtype),
        }
