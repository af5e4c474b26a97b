"""GLUE metrics by name, from scikit-learn and scipy (imported when a metric
is computed, so that importing the plugin loads neither). Each takes numpy
arrays (predictions, targets) and returns a float; F1 and Matthews
correlation are those of label 1 against the rest, as GLUE reports them for
MRPC, QQP and CoLA. A correlation of a constant series is 0 (not NaN)."""
import numpy as np


def accuracy(predictions: np.ndarray, targets: np.ndarray) -> float:
    from sklearn import metrics

    return float(metrics.accuracy_score(targets, predictions))


def f1(predictions: np.ndarray, targets: np.ndarray) -> float:
    from sklearn import metrics

    return float(metrics.f1_score(targets == 1, predictions == 1, zero_division=0))


def matthews(predictions: np.ndarray, targets: np.ndarray) -> float:
    from sklearn import metrics

    return float(metrics.matthews_corrcoef(targets == 1, predictions == 1))


def _correlation(function, predictions: np.ndarray, targets: np.ndarray) -> float:
    if np.ptp(predictions) == 0 or np.ptp(targets) == 0:
        return 0.0
    return float(function(predictions, targets).statistic)


def pearson(predictions: np.ndarray, targets: np.ndarray) -> float:
    from scipy import stats

    return _correlation(stats.pearsonr, predictions, targets)


def spearman(predictions: np.ndarray, targets: np.ndarray) -> float:
    """Pearson of the ranks, ties averaged."""
    from scipy import stats

    return _correlation(stats.spearmanr, predictions, targets)


METRICS = {"accuracy": accuracy, "f1": f1, "mcc": matthews, "pearson": pearson, "spearman": spearman}
