"""GLUE evaluation metrics over a whole evaluation set, with the original's names.

The original computed streaming TF1 metrics: `eval_accuracy` and `eval_loss` for every task,
`matthew_corr` for cola, `pearson` and `MSE` for sts-b, all weighted by `is_real_example`.
GLUE also scores MRPC and QQP by F1 and STS-B by Spearman correlation, which the original
omitted; they are added here as `f1` and `spearman`. Everything is computed in float64 numpy
on the concatenated predictions, so the figures are exact rather than streaming approximations.
"""

import numpy as np

from albert_tf.glue import processors


def _weights(weights, size):
    if weights is None:
        return np.ones(size, dtype=np.float64)
    return np.asarray(weights, dtype=np.float64)


def accuracy(labels, predictions, weights=None):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    weights = _weights(weights, labels.shape[0])
    return float(np.sum(weights * (labels == predictions)) / np.sum(weights))


def mean_loss(per_example_loss, weights=None):
    per_example_loss = np.asarray(per_example_loss, dtype=np.float64)
    weights = _weights(weights, per_example_loss.shape[0])
    return float(np.sum(weights * per_example_loss) / np.sum(weights))


def _confusion(labels, predictions, weights):
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    weights = _weights(weights, labels.shape[0])
    tp = np.sum(weights * (labels & predictions))
    tn = np.sum(weights * (~labels & ~predictions))
    fp = np.sum(weights * (~labels & predictions))
    fn = np.sum(weights * (labels & ~predictions))
    return tp, tn, fp, fn


def matthews_corrcoef(labels, predictions, weights=None):
    """Binary MCC (class 1 positive); 0 when a row or column of the confusion matrix is empty."""
    tp, tn, fp, fn = _confusion(labels, predictions, weights)
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator > 0 else 0.0


def f1_score(labels, predictions, weights=None):
    """Binary F1 of class 1; 0 when there are no true positives."""
    tp, _, fp, fn = _confusion(labels, predictions, weights)
    return float(2 * tp / (2 * tp + fp + fn)) if tp > 0 else 0.0


def pearson(labels, predictions, weights=None):
    labels = np.asarray(labels, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    weights = _weights(weights, labels.shape[0])
    weights = weights / np.sum(weights)
    label_dev = labels - np.sum(weights * labels)
    prediction_dev = predictions - np.sum(weights * predictions)
    denominator = np.sqrt(np.sum(weights * label_dev ** 2) * np.sum(weights * prediction_dev ** 2))
    return float(np.sum(weights * label_dev * prediction_dev) / denominator) if denominator > 0 else 0.0


def _average_ranks(values):
    """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values), dtype=np.float64)
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    return ranks


def spearman(labels, predictions, weights=None):
    """Pearson correlation of the average ranks of the examples with a non-zero weight."""
    weights = _weights(weights, len(labels))
    keep = weights > 0
    return pearson(_average_ranks(np.asarray(labels)[keep]),
                   _average_ranks(np.asarray(predictions)[keep]), weights[keep])


def mean_squared_error(labels, predictions, weights=None):
    labels = np.asarray(labels, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    weights = _weights(weights, labels.shape[0])
    return float(np.sum(weights * (labels - predictions) ** 2) / np.sum(weights))


def glue_metrics(task_name, labels, predictions, per_example_loss, weights=None):
    """The metric dict of one evaluation: the task's `metric_names` (its processor says which,
    in the original's order), then `eval_loss`."""
    compute = {"eval_accuracy": accuracy, "f1": f1_score, "matthew_corr": matthews_corrcoef,
               "pearson": pearson, "spearman": spearman, "MSE": mean_squared_error}
    results = {name: compute[name](labels, predictions, weights)
               for name in processors.processor_class(task_name).metric_names}
    results["eval_loss"] = mean_loss(per_example_loss, weights)
    return results


def selection_metric(task_name):
    """The metric that picks `model.ckpt-best` (higher is better), as the original."""
    return processors.processor_class(task_name).selection_metric
