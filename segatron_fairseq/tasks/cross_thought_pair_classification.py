"""Task ``cross_thought_pair_classification``: sequence-pair classification
from Cross-Thought sentence embeddings (paper Eq. 11).

The two texts of a GLUE-format TSV line (MNLI, SNLI, QQP style; the file
options are those of ``text_classification``) are encoded separately as two
short sequences, each cut to ``--max-sequence-length`` on its own (the log
counts the cut texts; no pair is dropped), the cross-sequence Transformer runs
over the pair, and the classification head reads the 2N cross states
(``--pair-pooling flatten``, the paper) or their mean (``average``, the
authors' code). Criterion: ``sentence_prediction_metrics``.
"""
import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from segatron_fairseq.data.sequence_pair_dataset import SequenceGroupDataset
from segatron_fairseq.tasks.per_sequence_sizes import PerSequenceSizeCheck
from segatron_fairseq.tasks.text_classification import TextClassificationConfig, TextClassificationTask

logger = logging.getLogger(__name__)


@dataclass
class CrossThoughtPairConfig(TextClassificationConfig):
    max_sequence_length: int = field(default=128, metadata={"help": "tokens kept of each text"})


@register_task("cross_thought_pair_classification", dataclass=CrossThoughtPairConfig)
class CrossThoughtPairClassificationTask(PerSequenceSizeCheck, TextClassificationTask):
    CRITERION = "sentence_prediction_metrics"  # fairseq's sentence_prediction reads RoBERTa's classification heads

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        if len(self.format.text_columns) != 2:
            raise ValueError("cross_thought_pair_classification needs two text columns (--text-columns A,B)")
        path, texts, targets = self.read_split(split)
        dataset = SequenceGroupDataset([[self.encode(t) for t in pair] for pair in texts], targets,
                                       self.dictionary.pad(), self.cfg.max_sequence_length)
        self.datasets[split] = dataset
        logger.info(f"{split}: {len(texts):,} pairs from {path}; {dataset.truncated:,} texts cut to "
                    f"--max-sequence-length {self.cfg.max_sequence_length}")
