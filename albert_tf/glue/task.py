"""The GLUE classifier as a `training.task.Task`: one head, its loss, its whole-set metrics.

Model: `AlbertClassifier` (dropout 0.1 on the pooled output, `output_weights` [num_labels, H],
`output_bias` at the root scope). Loss, as `classifier_utils.create_model`: softmax cross-entropy
for classification; for sts-b the logits are squeezed to [B] and the loss is the squared error.
Predictions are the argmax (the logit for sts-b); probabilities are the softmax (the raw [B, 1]
logits for sts-b, as the original).

Evaluation and prediction collect every prediction of the set (`aggregate_logs`, run by
`training.prediction.aggregate`); evaluation computes the metrics in numpy
(`reduce_aggregated_logs`, `metrics.glue_metrics`): exact rather than streaming, and Spearman
needs every prediction at once.
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.glue import features, metrics
from albert_tf.modeling import classifier, encoder
from albert_tf.training import length_buckets as length_buckets_lib
from albert_tf.training import task as task_lib

CLASSIFIER_DROPOUT = 0.1  # hard-coded in the original (keep_prob 0.9)


def outputs_from_logits(logits, regression):
    """{'probabilities', 'predictions'} as the original's predict dict."""
    logits = tf.cast(logits, tf.float32)
    if regression:
        return {"probabilities": logits, "predictions": tf.squeeze(logits, -1)}
    return {"probabilities": tf.nn.softmax(logits, axis=-1),
            "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def per_example_loss(logits, labels, regression):
    logits = tf.cast(logits, tf.float32)
    if regression:
        return tf.square(tf.squeeze(logits, -1) - tf.cast(labels, tf.float32))
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                          logits=logits)


class ClassifierTask(task_lib.RecordFilesTask):
    """GLUE fine-tuning: the records of `features.write_records`, one classification head."""

    eval_metric_higher_is_better = True

    def __init__(self, albert_config, task_name, num_labels, max_seq_length, train_file=None,
                 eval_file=None, shuffle_buffer=100, batching=length_buckets_lib.PADDED,
                 predict_file=None):
        """`batching`: the run's `training.length_buckets.Batching` (default: padded)."""
        super().__init__(albert_config, max_seq_length, batching, train_file, eval_file,
                         predict_file)
        self.task_name = task_name.lower()
        self.num_labels = num_labels
        self.shuffle_buffer = shuffle_buffer
        self.regression = features.is_regression(self.task_name)
        self.eval_metric_name = metrics.selection_metric(self.task_name)

    def build_model(self, strategy):
        return classifier.AlbertClassifier(
            encoder.AlbertEncoder(self.albert_config, **self.batching.encoder_options),
            self.num_labels, dropout_rate=CLASSIFIER_DROPOUT)

    def parse_records(self, records):
        return features.parse_records(records, self.max_seq_length, self.regression)

    def per_example_loss(self, features_, outputs):
        return per_example_loss(outputs["logits"], features_["label_ids"], self.regression)

    def build_metrics(self):
        """Training-time accuracy for the logs; evaluation uses `metrics.glue_metrics`."""
        if self.regression:
            return {}
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def update_metrics(self, metrics_, features_, outputs):
        if "accuracy" in metrics_:
            metrics_["accuracy"].update_state(features_["label_ids"], outputs["logits"])

    def eval_step_outputs(self, features_, outputs):
        return step_outputs(outputs["logits"], features_, self.regression)

    def aggregate_logs(self, state, step_outputs_):
        """Every batch's arrays, in order."""
        state = [] if state is None else state
        state.append(step_outputs_)
        return state

    def reduce_aggregated_logs(self, state):
        return evaluate_arrays(self.task_name, concatenated(state))


def step_outputs(logits, batch, regression):
    """One batch's `logits`, `probabilities`, `predictions`, `per_example_loss`, `label_ids`
    and `is_real_example`."""
    logits = tf.cast(logits, tf.float32)
    outputs = outputs_from_logits(logits, regression)
    outputs["logits"] = logits
    outputs["per_example_loss"] = per_example_loss(logits, batch["label_ids"], regression)
    outputs["label_ids"] = batch["label_ids"]
    outputs["is_real_example"] = batch["is_real_example"]
    return outputs


def concatenated(state):
    """The arrays of an aggregated state (a list of batches' arrays), rows in input order."""
    return {name: np.concatenate([batch[name] for batch in state]) for name in state[0]}


def evaluate_arrays(task_name, arrays):
    """The GLUE metrics of `concatenated` arrays (original names + f1 / spearman)."""
    return metrics.glue_metrics(task_name, arrays["label_ids"], arrays["predictions"],
                                arrays["per_example_loss"], arrays["is_real_example"])
