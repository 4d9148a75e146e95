"""RACE metrics over whole sets of predictions, with the per-level breakdown RACE is reported by.

`eval_accuracy` and `eval_loss` (mean cross-entropy per question) as the original, plus for
each level read `eval_accuracy_<level>`, `eval_loss_<level>` and `eval_num_<level>` (questions),
so the total accuracy is the count-weighted mean of the levels' (README table: "RACE test
(Middle/High)").
"""

import numpy as np

from albert_tf.race import reader


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def race_metrics(logits, label_ids, level_ids, levels=reader.LEVELS):
    """Metrics of [N, 4] logits against [N] labels, for the given levels (names)."""
    logits = np.asarray(logits, dtype=np.float64)
    label_ids, level_ids = np.asarray(label_ids), np.asarray(level_ids)
    if not len(label_ids):
        raise ValueError("no questions to evaluate")
    correct = logits.argmax(axis=-1) == label_ids
    losses = -log_softmax(logits)[np.arange(len(label_ids)), label_ids]
    results = {"eval_accuracy": float(correct.mean()), "eval_loss": float(losses.mean())}
    for level in levels:
        in_level = level_ids == reader.LEVELS.index(level)
        count = int(in_level.sum())
        results[f"eval_num_{level}"] = count
        results[f"eval_accuracy_{level}"] = float(correct[in_level].mean()) if count else 0.0
        results[f"eval_loss_{level}"] = float(losses[in_level].mean()) if count else 0.0
    return results
