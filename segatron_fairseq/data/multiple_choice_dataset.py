"""Multiple-choice examples, one model input per option, in SegaBERT's layout.

An option's input is [CLS] query [SEP] article [SEP]. The query is paragraph
0: the question is sentence 0 and the option sentence 1 (a cloze question,
with "_", has the option put in its place and is sentence 0 alone); the
article's lines are paragraphs 1.., its sentences counted from 0 in each
(``span_windows.tokenize_context``). Token indexes count within each
sentence; [CLS] and [SEP] take their left neighbour's indexes ([CLS]: the
first token's; ``segments.layout_of_texts``); token type 0 up to the first
[SEP], 1 after. The article is cut at its end to fit ``max_positions``.
Example, question "who ?", option "Al", article "A b . C d ." (whitespace
words):

    token     [CLS] who ?  Al [SEP] A  b  .  C  d  .  [SEP]
    paragraph   0    0  0   0   0   1  1  1  1  1  1    1
    sentence    0    0  0   1   1   0  0  0  1  1  1    1
    token       0    0  1   0   0   0  1  2  0  1  2    2
    type        0    0  0   0   0   1  1  1  1  1  1    1
"""
from typing import List, Sequence, Tuple

import torch

from segatron_fairseq.segments import Text, layout_of_texts
from segatron_preprocess.corpus_format import INDEX_NAMES

from .example_list_dataset import ExampleListDataset, segment_net_input
from .span_windows import TokenizedText

OptionLayout = Tuple[List[int], List[int], List[int], List[int], List[int]]  # tokens, paragraph, sentence, token, type


def option_layout(query: Sequence[Sequence[int]], article: TokenizedText, bos: int, eos: int, max_positions: int,
                  table_sizes: dict) -> OptionLayout:
    """One option's input; ``query``: the token ids of its sentences (question, option)."""
    head = sum(len(text) for text in query) + 2
    room = max_positions - head - 1
    if room < 1:
        raise ValueError(f"max_positions {max_positions} leaves no room for the article after a "
                         f"{head - 2}-token query")
    query_text = Text([t for text in query for t in text],
                      {"paragraph": [0] * (head - 2), "sentence": [n for n, text in enumerate(query) for _ in text],
                       "token": [k for text in query for k in range(len(text))]})
    layout = layout_of_texts([query_text, article.text(0, room)], bos, eos, table_sizes)
    return (layout.tokens.tolist(), *(layout.indexes[name].tolist() for name in INDEX_NAMES),
            layout.token_type.tolist())


class MultipleChoiceDataset(ExampleListDataset):
    """Examples of K options each; a batch is (B * K, T) inputs, ``target``
    (B,) the right option and ``group`` (B,) each example's group number
    (RACE: middle 0, high 1)."""

    def __init__(self, examples: List[List[OptionLayout]], targets: List[int], groups: List[int], pad: int):
        super().__init__([max(len(option[0]) for option in options) for options in examples])
        self.examples, self.targets, self.groups, self.pad = examples, targets, groups, pad

    def collater(self, indices):
        if not indices:
            return {}
        options = [option for i in indices for option in self.examples[i]]
        net_input = segment_net_input(*zip(*options), self.pad)
        return {
            "id": torch.tensor(indices),
            "nsentences": len(indices),
            "ntokens": int(net_input["src_tokens"].ne(self.pad).sum()),
            "net_input": net_input,
            "target": torch.tensor([self.targets[i] for i in indices]),
            "group": torch.tensor([self.groups[i] for i in indices]),
        }
