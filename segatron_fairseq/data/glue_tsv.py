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


@dataclasses.dataclass(frozen=True)
class GlueTestFile:
    """A GLUE test file (header line, ``index`` in column 0, no label) and the
    file of the GLUE server's submission that holds its predictions."""

    file: str
    text_columns: Tuple[int, ...]
    submission: str


GLUE_TEST_FILES: Dict[str, Tuple[GlueTestFile, ...]] = {
    "CoLA": (GlueTestFile("test.tsv", (1,), "CoLA.tsv"),),
    "SST-2": (GlueTestFile("test.tsv", (1,), "SST-2.tsv"),),
    "MRPC": (GlueTestFile("test.tsv", (3, 4), "MRPC.tsv"),),
    "STS-B": (GlueTestFile("test.tsv", (7, 8), "STS-B.tsv"),),
    "QQP": (GlueTestFile("test.tsv", (1, 2), "QQP.tsv"),),
    "MNLI": (GlueTestFile("test_matched.tsv", (8, 9), "MNLI-m.tsv"),
             GlueTestFile("test_mismatched.tsv", (8, 9), "MNLI-mm.tsv")),
    "QNLI": (GlueTestFile("test.tsv", (1, 2), "QNLI.tsv"),),
    "RTE": (GlueTestFile("test.tsv", (1, 2), "RTE.tsv"),),
    "WNLI": (GlueTestFile("test.tsv", (1, 2), "WNLI.tsv"),),
}
# the diagnostic set (glue_data/diagnostic/diagnostic.tsv), predicted by the MNLI model
GLUE_DIAGNOSTIC = GlueTestFile("diagnostic.tsv", (1, 2), "AX.tsv")


def read_test_tsv(path: str, columns: Tuple[int, ...]) -> List[Tuple[str, List[str]]]:
    """(index, texts) of each line of a GLUE test file."""
    fmt = GlueFormat(columns, 0, True, None, ())
    return [(index, texts) for texts, index in read_tsv(path, fmt)]


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
