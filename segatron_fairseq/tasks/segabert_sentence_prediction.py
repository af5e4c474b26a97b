"""Task ``segabert_sentence_prediction``: GLUE-style fine-tuning of SegaBERT.

Reads GLUE-format TSV files from ``data`` (``train.tsv``, the dev file as
split ``valid``, any other split ``{split}.tsv``), tokenizes them like the
pre-training corpus in ``pretrain_data`` (its ``dict.txt`` and, when it was
binarized with ``--bpe sentencepiece``, its ``sentencepiece.model``) and lays
them out as the paper does (``SentencePredictionDataset``). ``--glue-task``
selects a GLUE task's columns, labels and metrics; otherwise give
``--text-columns``, ``--label-column``, ``--header`` and ``--metrics``.
Load the pre-trained model with ``--restore-file`` (and the ``--reset-*``
flags); the criterion is ``sentence_prediction_metrics``.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import register_task
from omegaconf import II

from segatron_fairseq.data.glue_tsv import GLUE_TASKS, GlueFormat, read_tsv
from segatron_fairseq.data.sentence_prediction_dataset import SentencePredictionDataset, segment_layout
from segatron_fairseq.data.text_encoder import text_encoder
from segatron_fairseq.tasks.segabert_mlm import load_dictionary_with_mask
from segatron_fairseq.tasks.single_dictionary_task import SingleDictionaryTask

logger = logging.getLogger(__name__)
METRICS = ("accuracy", "f1", "mcc", "pearson", "spearman")


@dataclass
class SegaBERTSentencePredictionConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "directory with train.tsv and the dev file"})
    pretrain_data: str = field(default="???", metadata={"help": "segatron-preprocess directory of pre-training"})
    glue_task: Optional[str] = field(default=None, metadata={"help": f"one of {', '.join(GLUE_TASKS)}"})
    text_columns: str = field(default="0", metadata={"help": "0-based text column(s), comma separated"})
    label_column: int = field(default=1, metadata={"help": "0-based label column (negative: from the end)"})
    header: bool = field(default=False, metadata={"help": "the files start with a header line"})
    labels: Optional[str] = field(default=None, metadata={"help": "comma separated label names (default: "
                                                                  "sorted labels of train.tsv)"})
    regression_target: bool = II("criterion.regression_target")
    metrics: str = field(default="accuracy", metadata={"help": f"comma separated, from {METRICS}"})
    valid_file: str = field(default="dev.tsv", metadata={"help": "the file read as split 'valid'"})
    max_positions: int = field(default=512, metadata={"help": "longest example, [CLS]/[SEP] included"})
    max_token_index: int = field(default=256, metadata={"help": "token index table size"})
    classification_head_name: str = field(default="sentence_classification_head")


@register_task("segabert_sentence_prediction", dataclass=SegaBERTSentencePredictionConfig)
class SegaBERTSentencePredictionTask(SingleDictionaryTask):
    def __init__(self, cfg, dictionary, fmt: GlueFormat, labels):
        super().__init__(cfg, dictionary)
        self.format, self.labels = fmt, labels
        self.encode = text_encoder(cfg.pretrain_data, dictionary)
        self.metrics = fmt.metrics

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dictionary = load_dictionary_with_mask(cfg.pretrain_data)
        if cfg.glue_task:
            if cfg.glue_task not in GLUE_TASKS:
                raise ValueError(f"--glue-task {cfg.glue_task}: choose from {', '.join(GLUE_TASKS)}")
            fmt = GLUE_TASKS[cfg.glue_task]
        else:
            metrics = tuple(m.strip() for m in cfg.metrics.split(","))
            unknown = [m for m in metrics if m not in METRICS]
            if unknown:
                raise ValueError(f"--metrics: unknown {unknown}; choose from {METRICS}")
            labels = None if cfg.regression_target else (
                tuple(cfg.labels.split(",")) if cfg.labels else
                tuple(sorted({label for _, label in read_tsv(
                    os.path.join(cfg.data, "train.tsv"),
                    GlueFormat(tuple(int(c) for c in cfg.text_columns.split(",")), cfg.label_column,
                               cfg.header, None, ()))})))
            fmt = GlueFormat(tuple(int(c) for c in cfg.text_columns.split(",")), cfg.label_column, cfg.header,
                             labels, metrics, cfg.valid_file)
        logger.info(f"{len(fmt.text_columns)} text(s) per example, "
                    f"{'regression' if fmt.labels is None else f'labels {list(fmt.labels)}'}, metrics {fmt.metrics}")
        return cls(cfg, dictionary, fmt, fmt.labels)

    @property
    def num_classes(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def target(self, label: str, path: str, number: int):
        """The class index (or value, for regression) of a label read from ``path``."""
        if self.labels is None:
            try:
                return float(label)
            except ValueError:
                raise ValueError(f"{path}: example {number}: label {label!r} is not a number") from None
        if label not in self.labels:
            raise ValueError(f"{path}: example {number}: label {label!r} is not one of {list(self.labels)}")
        return self.labels.index(label)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        name = {"train": "train.tsv", "valid": self.format.valid_file}.get(split, f"{split}.tsv")
        path = os.path.join(self.cfg.data, name)
        examples, targets = [], []
        for number, (texts, label) in enumerate(read_tsv(path, self.format), start=1):
            targets.append(self.target(label, path, number))
            examples.append(segment_layout([self.encode(t) for t in texts], self.dictionary.bos(),
                                           self.dictionary.eos(), self.cfg.max_positions, self.cfg.max_token_index))
        self.datasets[split] = SentencePredictionDataset(examples, targets, self.dictionary.pad(),
                                                         regression=self.labels is None)
        logger.info(f"{split}: {len(examples):,} examples from {path}")

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        model.register_classification_head(self.cfg.classification_head_name, num_classes=self.num_classes)
        return model

    def max_positions(self):
        return self.cfg.max_positions
