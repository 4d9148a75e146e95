"""SQuAD as a `training.task.Task`: the v1 or v2 model, the training records, the loss, and the
official scoring as whole-set evaluation (as TF Model Garden's question-answering task).

Evaluation is not the loop's loss/metrics pass: `aggregate_logs` collects the raw outputs of
every window of the predict set (then of the --threshold_predict_file set, told apart by
`part`), and `reduce_aggregated_logs` post-processes them into answers, writes the prediction
files and runs the official scoring (`squad.prediction.SquadEvaluator.score`); a predict set
without answers is only predicted, as the QA task of TF Model Garden predicts (its results are
then the v2 no-answer threshold used, if any). The task's `eval_metric_name` is "f1", the key
the evaluate-every-checkpoint loop keeps the best by.
"""

import numpy as np
import tensorflow as tf

from albert_tf.modeling import encoder, squad_heads
from albert_tf.squad import prediction, records
from albert_tf.training import length_buckets as length_buckets_lib
from albert_tf.training import task as task_lib

TRAIN_SHUFFLE_BUFFER = 100  # the original's d.shuffle(buffer_size=100)
KEEP_PADDING_V1 = ("SQuAD v1.1's heads score padding positions (as the original's), so trimmed "
                   "batches would change its loss and answers; length buckets need "
                   "--version_2_with_negative")


class SquadTask(task_lib.Task):
    """`train_record_file`: the training TFRecord (`squad.feature_cache`), None to only predict."""

    eval_metric_name = "f1"
    eval_metric_higher_is_better = True

    def __init__(self, albert_config, version_2_with_negative, max_seq_length,
                 train_record_file=None, start_n_top=5, end_n_top=5, dropout_prob=0.1,
                 batching=length_buckets_lib.PADDED, scorer=None,
                 output_dir=None):
        """`batching`: the run's `training.length_buckets.Batching` (padded for v1.1, see
        `KEEP_PADDING_V1`); `scorer`: the `prediction.SquadEvaluator` of the predict set
        (None: no evaluation), writing its prediction files to `output_dir`."""
        self.albert_config = albert_config
        self.version_2_with_negative = version_2_with_negative
        self.max_seq_length = max_seq_length
        self.train_record_file = train_record_file
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        self.dropout_prob = dropout_prob
        self.batching = batching
        self.scorer, self.output_dir = scorer, output_dir

    def build_model(self, strategy):
        return squad_heads.build_squad_model(
            encoder.AlbertEncoder(self.albert_config, **self.batching.encoder_options),
            self.version_2_with_negative, self.start_n_top, self.end_n_top, self.dropout_prob)

    def train_dataset(self, input_context, batch_size):
        if not self.train_record_file:
            raise ValueError("training needs --train_file")
        dataset = task_lib.shard(
            records.tfrecord_dataset(self.train_record_file, self.max_seq_length, True),
            input_context)
        return self.batching.train_batches(dataset.repeat().shuffle(TRAIN_SHUFFLE_BUFFER),
                                           batch_size, self.max_seq_length)

    def per_example_loss(self, features, outputs):
        if self.version_2_with_negative:
            return squad_heads.v2_per_example_loss(
                outputs, features["start_positions"], features["end_positions"],
                features["is_impossible"])
        return squad_heads.v1_per_example_loss(outputs, features["start_positions"],
                                               features["end_positions"])

    def _eval_sets(self):
        return [self.scorer.predict_set] + (
            [self.scorer.threshold_set] if self.scorer.threshold_set is not None else [])

    def eval_dataset(self, input_context, batch_size):
        """The predict set's windows, then the threshold set's, each with its `part` index."""
        if self.scorer is None:
            raise ValueError("SquadTask has no predict set to evaluate on")
        dataset = None
        for part, predict_set in enumerate(self._eval_sets()):
            windows = records.tfrecord_dataset(predict_set.record_file, self.max_seq_length,
                                               False).map(
                lambda features, part=part: dict(features, part=tf.constant(part)))
            dataset = windows if dataset is None else dataset.concatenate(windows)
        return self.batching.trim(task_lib.shard(dataset, input_context).batch(batch_size),
                                  self.max_seq_length)

    def predict_dataset(self, input_context, batch_size):
        """The predict file is SQuAD's evaluation set, scored or (without answers) predicted."""
        return self.eval_dataset(input_context, batch_size)

    def eval_step_outputs(self, features, outputs):
        raw = {name: outputs[name] for name in prediction.RAW_OUTPUTS if name in outputs}
        return dict(raw, unique_ids=features["unique_ids"], part=features["part"])

    def aggregate_logs(self, state, step_outputs):
        state = [] if state is None else state
        state.append(step_outputs)
        return state

    def reduce_aggregated_logs(self, state):
        """The official scores (v2: with the no-answer threshold); writes the prediction
        files. A predict set without answers: {} (v1) or {"null_score_diff_threshold"} (v2)."""
        arrays = {name: np.concatenate([batch[name] for batch in state]) for name in state[0]}
        by_set = {}
        for part, predict_set in enumerate(self._eval_sets()):
            rows = arrays["part"] == part
            by_set[id(predict_set)] = self.scorer.raw_results_of(
                {name: value[rows] for name, value in arrays.items()})

        def raw_results(predict_set):
            return by_set[id(predict_set)]

        if self.scorer.is_labelled:
            return self.scorer.score(raw_results, self.output_dir)
        threshold = self.scorer.predict_unlabelled(raw_results, self.output_dir)
        return {} if threshold is None else {"null_score_diff_threshold": threshold}
