"""Token classification as a `training.task.Task`: the loss and metrics count words.

The loss is the cross-entropy at each word's first piece, averaged over the words of the global
batch (the MLM loss's weighting). Evaluation is whole-set (`aggregate_logs` /
`reduce_aggregated_logs`): the predicted tag of every word is collected, then word accuracy and,
for BIO tag sets, span F1 are computed; `model.ckpt-best` is chosen by F1 (BIO) or accuracy.
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.modeling import encoder, token_classifier
from albert_tf.tagging import features, metrics
from albert_tf.training import length_buckets as length_buckets_lib
from albert_tf.training import task as task_lib


class TaggingTask(task_lib.RecordFilesTask):
    eval_metric_higher_is_better = True

    def __init__(self, albert_config, labels, max_seq_length, train_file=None, eval_file=None,
                 batching=length_buckets_lib.PADDED, shuffle_buffer=100, dropout_rate=0.1,
                 predict_file=None):
        super().__init__(albert_config, max_seq_length, batching, train_file, eval_file,
                         predict_file)
        self.labels = list(labels)
        self.bio = metrics.is_bio(self.labels)
        self.eval_metric_name = "f1" if self.bio else "eval_accuracy"
        self.shuffle_buffer = shuffle_buffer
        self.dropout_rate = dropout_rate

    def build_model(self, strategy):
        return token_classifier.AlbertTokenClassifier(
            encoder.AlbertEncoder(self.albert_config, **self.batching.encoder_options),
            len(self.labels), self.dropout_rate)

    def parse_records(self, records):
        return features.parse(records, self.max_seq_length)

    def loss_normalizers(self, features_):
        return {"words": tf.reduce_sum(features_["label_weights"])}

    def compute_loss(self, features_, outputs, normalizers):
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=features_["label_ids"], logits=outputs["logits"])
        return (tf.reduce_sum(losses * features_["label_weights"])
                / tf.maximum(normalizers["words"], 1.0))

    def build_metrics(self):
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def update_metrics(self, metrics_, features_, outputs):
        metrics_["accuracy"].update_state(features_["label_ids"], outputs["logits"],
                                          sample_weight=features_["label_weights"])

    def eval_step_outputs(self, features_, outputs):
        return {"predictions": tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32),
                "label_ids": features_["label_ids"], "label_weights": features_["label_weights"],
                "sentence_index": features_["sentence_index"]}

    def aggregate_logs(self, state, step_outputs):
        """{sentence index: (gold tag ids, predicted tag ids)} of the words that fit."""
        state = {} if state is None else state
        for row, index in enumerate(step_outputs["sentence_index"]):
            words = step_outputs["label_weights"][row] > 0
            state[int(index)] = (step_outputs["label_ids"][row][words],
                                 step_outputs["predictions"][row][words])
        return state

    def reduce_aggregated_logs(self, state):
        labels = np.array(self.labels)
        order = sorted(state)
        gold = [labels[state[index][0]].tolist() for index in order]
        predicted = [labels[state[index][1]].tolist() for index in order]
        return metrics.tagging_metrics(gold, predicted, self.bio)
