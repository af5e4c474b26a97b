"""GLUE-format TSV files for sentence(-pair) classification and regression.

``GlueFormat`` says where the texts and the label are in a line; presets hold
the layouts of the GLUE tasks' own train/dev files. ``read_tsv`` returns
(texts, label) pairs and names the file and line of anything malformed.
"""
import csv
import dataclasses
from typing import Dict, List, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class GlueFormat:
    text_columns: Tuple[int, ...]
    label_column: int  # negative counts from the end (MNLI's gold_label is last)
    header: bool
    labels: Optional[Tuple[str, ...]]  # None: regression
    metrics: Tuple[str, ...]
    valid_file: str = "dev.tsv"


GLUE_TASKS: Dict[str, GlueFormat] = {
    "CoLA": GlueFormat((3,), 1, False, ("0", "1"), ("mcc",)),
    "SST-2": GlueFormat((0,), 1, True, ("0", "1"), ("accuracy",)),
    "MRPC": GlueFormat((3, 4), 0, True, ("0", "1"), ("accuracy", "f1")),
    "STS-B": GlueFormat((7, 8), -1, True, None, ("pearson", "spearman")),
    "QQP": GlueFormat((3, 4), 5, True, ("0", "1"), ("accuracy", "f1")),
    "MNLI": GlueFormat((8, 9), -1, True, ("contradiction", "entailment", "neutral"), ("accuracy",),
                       valid_file="dev_matched.tsv"),
    "QNLI": GlueFormat((1, 2), -1, True, ("entailment", "not_entailment"), ("accuracy",)),
    "RTE": GlueFormat((1, 2), -1, True, ("entailment", "not_entailment"), ("accuracy",)),
    "WNLI": GlueFormat((1, 2), -1, True, ("0", "1"), ("accuracy",)),
}


def read_tsv(path: str, fmt: GlueFormat) -> List[Tuple[List[str], str]]:
    rows = []
    try:
        f = open(path, encoding="utf-8", newline="")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: GLUE TSV file not found") from None
    with f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            for number, fields in enumerate(reader, start=1):
                if number == 1 and fmt.header:
                    continue
                if not fields or all(not x.strip() for x in fields):
                    continue
                needed = max(max(fmt.text_columns), fmt.label_column if fmt.label_column >= 0 else 0) + 1
                if len(fields) < needed or len(fields) < -fmt.label_column:
                    raise ValueError(f"{path}: line {number} has {len(fields)} columns, the format needs "
                                     f"{needed} (text columns {fmt.text_columns}, label column {fmt.label_column})")
                rows.append(([fields[c] for c in fmt.text_columns], fields[fmt.label_column].strip()))
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}: not valid UTF-8 ({err.reason})") from None
    if not rows:
        raise ValueError(f"{path}: no examples")
    return rows
