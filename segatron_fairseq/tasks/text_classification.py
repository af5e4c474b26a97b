"""Base of the GLUE-style tasks: classification or regression of one text or
a pair of texts, read from TSV files.

``data`` holds ``train.tsv``, the dev file (read as split ``valid``) and
``{split}.tsv`` for any other split. ``--glue-task`` selects a GLUE task's
columns, labels and metrics (``data/glue_tsv.py``); otherwise give
``--text-columns``, ``--label-column``, ``--header``, ``--labels`` and
``--metrics``. The model gets a classification head named
``--classification-head-name`` with one output per label (one for
regression); the criterion is ``sentence_prediction_metrics``. A task on top
lays the texts out for its model in ``load_dataset``.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from omegaconf import II

from segatron_fairseq.data.glue_tsv import GLUE_TASKS, GlueFormat, read_tsv
from segatron_fairseq.evaluation.glue_metrics import METRICS
from segatron_fairseq.tasks.finetuning_task import FinetuningConfig, FinetuningTask

logger = logging.getLogger(__name__)


@dataclass
class TextClassificationConfig(FinetuningConfig):
    data: str = field(default="???", metadata={"help": "directory with train.tsv and the dev file"})
    glue_task: Optional[str] = field(default=None, metadata={"help": f"one of {', '.join(GLUE_TASKS)}"})
    text_columns: str = field(default="0", metadata={"help": "0-based text column(s), comma separated"})
    label_column: int = field(default=1, metadata={"help": "0-based label column (negative: from the end)"})
    header: bool = field(default=False, metadata={"help": "the files start with a header line"})
    labels: Optional[str] = field(default=None, metadata={"help": "comma separated label names (default: "
                                                                  "sorted labels of train.tsv)"})
    regression_target: bool = II("criterion.regression_target")
    metrics: str = field(default="accuracy", metadata={"help": f"comma separated, from {tuple(METRICS)}"})
    valid_file: str = field(default="dev.tsv", metadata={"help": "the file read as split 'valid'"})
    classification_head_name: str = field(default="sentence_classification_head")


def file_format(cfg: TextClassificationConfig) -> GlueFormat:
    """The GLUE preset ``cfg.glue_task``, or the layout the column options describe."""
    if cfg.glue_task:
        if cfg.glue_task not in GLUE_TASKS:
            raise ValueError(f"--glue-task {cfg.glue_task}: choose from {', '.join(GLUE_TASKS)}")
        return GLUE_TASKS[cfg.glue_task]
    metrics = tuple(m.strip() for m in cfg.metrics.split(","))
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"--metrics: unknown {unknown}; choose from {tuple(METRICS)}")
    columns = tuple(int(c) for c in cfg.text_columns.split(","))
    labels = None
    if not cfg.regression_target:
        if cfg.labels:
            labels = tuple(cfg.labels.split(","))
        else:
            train = read_tsv(os.path.join(cfg.data, "train.tsv"), GlueFormat(columns, cfg.label_column, cfg.header,
                                                                              None, ()))
            labels = tuple(sorted({label for _, label in train}))
    return GlueFormat(columns, cfg.label_column, cfg.header, labels, metrics, cfg.valid_file)


class TextClassificationTask(FinetuningTask):
    def __init__(self, cfg: TextClassificationConfig, dictionary, fmt: GlueFormat):
        super().__init__(cfg, dictionary)
        self.format, self.labels, self.metrics = fmt, fmt.labels, fmt.metrics

    @classmethod
    def setup_task(cls, cfg: TextClassificationConfig, **kwargs):
        fmt = file_format(cfg)
        logger.info(f"{len(fmt.text_columns)} text(s) per example, "
                    f"{'regression' if fmt.labels is None else f'labels {list(fmt.labels)}'}, metrics {fmt.metrics}")
        return cls(cfg, cls.pretraining_dictionary(cfg), fmt)

    @property
    def num_classes(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def split_path(self, split: str) -> str:
        name = {"train": "train.tsv", "valid": self.format.valid_file}.get(split, f"{split}.tsv")
        return os.path.join(self.cfg.data, name)

    def read_split(self, split: str) -> Tuple[str, List[List[str]], list]:
        """(path, texts of each example, targets) of ``split``: a target is a
        class index, or a float for regression."""
        path = self.split_path(split)
        rows = read_tsv(path, self.format)
        targets = [self.target(label, path, number) for number, (_, label) in enumerate(rows, start=1)]
        return path, [texts for texts, _ in rows], targets

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

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        model.register_classification_head(self.cfg.classification_head_name, num_classes=self.num_classes)
        return model
