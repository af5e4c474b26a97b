"""Logging shared by the criterions whose sample size is a number of
examples (windows, questions, pairs): the loss per example in base 2, and
percentages of examples."""
import math

from fairseq import metrics


def log_loss_per_example(logging_outputs) -> int:
    """Log ``loss`` (summed loss / examples, base 2); returns the number of examples (0: nothing logged)."""
    total = sum(log.get("sample_size", 0) for log in logging_outputs)
    if total:
        loss = sum(float(log.get("loss", 0)) for log in logging_outputs)
        metrics.log_scalar("loss", loss / total / math.log(2), total, round=3)
    return total


def log_percent(name: str, logging_outputs, key: str, count_key: str = "sample_size") -> None:
    """Log ``name``: 100 x the sum of ``key`` over the sum of ``count_key`` (nothing when that is 0)."""
    count = sum(log.get(count_key, 0) for log in logging_outputs)
    if count:
        metrics.log_scalar(name, 100.0 * sum(log.get(key, 0) for log in logging_outputs) / count, count, round=2)
