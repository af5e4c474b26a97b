"""Sentence pairs for a siamese encoder: each text laid out alone as SegaBERT
encodes one text ([CLS] text [SEP], paragraph 0, sentence 0, token indexes
from 0; ``segments.layout_of_paragraphs``). A batch holds
``net_input`` (the first texts), ``net_input_b`` (the second texts) and the
target."""
from typing import List

import torch

from .example_list_dataset import ExampleListDataset
from .sentence_prediction_dataset import SentencePredictionDataset


class SiamesePairDataset(ExampleListDataset):
    def __init__(self, first: SentencePredictionDataset, second: SentencePredictionDataset, targets: List):
        super().__init__([max(a, b) for a, b in zip(first.sizes, second.sizes)])
        self.first, self.second, self.targets = first, second, targets

    def collater(self, indices):
        if not indices:
            return {}
        a, b = self.first.collater(indices), self.second.collater(indices)
        return {"id": torch.tensor(indices), "nsentences": len(indices), "ntokens": a["ntokens"] + b["ntokens"],
                "net_input": a["net_input"], "net_input_b": b["net_input"], "target": a["target"]}
