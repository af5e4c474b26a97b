"""Classification / regression examples in SegaBERT's fine-tuning layout.

One text:  [CLS] a_1 .. a_n [SEP]            paragraph 0, sentence 0
Two texts: [CLS] a_1 .. a_n [SEP] b_1 .. b_m [SEP]
           a: paragraph 0, sentence 0;  b: paragraph 1, sentence 0
Token indexes count within each text from 0; [CLS] and [SEP] take the indexes
of their neighbouring token on the left ([CLS]: the first token's;
``segments.layout_of_texts``). BERT's token type (segment A / B) is the text's
number, so it equals the paragraph index here and goes to the model as
``token_type``.
"""
from typing import List, Tuple

import torch

from .example_list_dataset import ExampleListDataset, segment_net_input


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
