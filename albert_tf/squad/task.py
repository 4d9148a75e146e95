"""SQuAD as a `training.task.Task`: the v1 or v2 model, the training records, the loss.

Evaluation is not the loop's loss/metrics pass: a checkpoint is scored by predicting answers
and running the official scoring (`squad.prediction.SquadEvaluator`), so the task's
`eval_metric_name` is "f1", the key the evaluate-every-checkpoint loop keeps the best by.
"""

from albert_tf.modeling import squad_heads
from albert_tf.squad import records
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
                 use_einsum=True, batching=length_buckets_lib.PADDED):
        """`batching`: the run's `training.length_buckets.Batching` (padded for v1.1, see
        `KEEP_PADDING_V1`)."""
        self.albert_config = albert_config
        self.version_2_with_negative = version_2_with_negative
        self.max_seq_length = max_seq_length
        self.train_record_file = train_record_file
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        self.dropout_prob = dropout_prob
        self.use_einsum = use_einsum
        self.batching = batching

    def build_model(self, strategy):
        return squad_heads.build_squad_model(
            self.albert_config, self.version_2_with_negative, self.start_n_top, self.end_n_top,
            self.dropout_prob, self.use_einsum,
            **self.batching.encoder_options)

    def train_dataset(self, input_context, batch_size):
        if not self.train_record_file:
            raise ValueError("training needs --train_file")
        dataset = records.tfrecord_dataset(self.train_record_file, self.max_seq_length, True)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        return self.batching.train_batches(dataset.repeat().shuffle(TRAIN_SHUFFLE_BUFFER),
                                           batch_size, self.max_seq_length)

    def per_example_loss(self, features, outputs):
        if self.version_2_with_negative:
            return squad_heads.v2_per_example_loss(
                outputs, features["start_positions"], features["end_positions"],
                features["is_impossible"])
        return squad_heads.v1_per_example_loss(outputs, features["start_positions"],
                                               features["end_positions"])
