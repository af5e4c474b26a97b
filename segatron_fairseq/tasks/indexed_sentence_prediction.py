"""Task ``indexed_sentence_prediction`` (alias ``segabert_sentence_prediction``):
GLUE-style fine-tuning of SegaBERT (and its ALBERT / ELECTRA / BERT variants)
or XLNet, the inputs carrying segment indexes.

The files and labels are those of ``text_classification`` (``--glue-task``,
or the column options); each example is laid out as the paper does
(``SentencePredictionDataset``: [CLS] a [SEP] b [SEP], text k in paragraph k).
Load the pre-trained model with ``--restore-file`` (and the ``--reset-*``
flags); the criterion is ``sentence_prediction_metrics``.
"""
import logging
from dataclasses import dataclass, field
from typing import List

from fairseq.tasks import register_task

from segatron_fairseq.data.sentence_prediction_dataset import SentencePredictionDataset
from segatron_fairseq.segments import TABLE_SIZES, layout_of_paragraphs
from segatron_fairseq.tasks.registry_aliases import register_alias
from segatron_fairseq.tasks.text_classification import TextClassificationConfig, TextClassificationTask

logger = logging.getLogger(__name__)


@dataclass
class IndexedSentencePredictionConfig(TextClassificationConfig):
    max_positions: int = field(default=512, metadata={"help": "longest example, [CLS]/[SEP] included"})
    max_token_index: int = field(default=TABLE_SIZES["token"], metadata={"help": "token index table size"})


@register_task("indexed_sentence_prediction", dataclass=IndexedSentencePredictionConfig)
class IndexedSentencePredictionTask(TextClassificationTask):
    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        path, texts, targets = self.read_split(split)
        self.datasets[split] = self.examples_dataset(texts, targets)
        logger.info(f"{split}: {len(texts):,} examples from {path}")

    def examples_dataset(self, texts: List[List[str]], targets: list) -> SentencePredictionDataset:
        """The dataset of examples given as their texts (one or two each) and targets."""
        bos, eos = self.dictionary.bos(), self.dictionary.eos()
        examples = [layout_of_paragraphs([self.encode(t) for t in example], bos, eos, self.cfg.max_positions,
                                         self.cfg.max_token_index) for example in texts]
        return SentencePredictionDataset(examples, targets, self.dictionary.pad(), regression=self.labels is None)

    def max_positions(self):
        return self.cfg.max_positions


register_alias("task", "segabert_sentence_prediction", "indexed_sentence_prediction")
