"""`Task`: what a job (pretraining, GLUE, SQuAD, RACE) plugs into the shared training loop.

The loop (`albert_tf.training.loop.Trainer`) owns the strategy, precision, optimizer, gradient
accumulation, checkpoints, logging and summaries. A task owns the model, the data and the loss.

Implementing a task (see `albert_tf/pretraining/task.py` for a complete one):

    class ColaTask(task.Task):
        def build_model(self, strategy):                  # called under strategy.scope()
            return classifier.AlbertClassifier(encoder.AlbertEncoder(self.config), num_labels=2)
        def train_dataset(self, input_context, batch_size):
            ds = tf.data.TFRecordDataset(self.train_file).repeat()
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            return ds.shuffle(100).map(self.parse).batch(batch_size, drop_remainder=True)
        def eval_dataset(self, input_context, batch_size):
            return tf.data.TFRecordDataset(self.eval_file).map(self.parse).batch(batch_size)
        def per_example_loss(self, features, outputs):
            return tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=features["label_ids"], logits=outputs["logits"])
        def build_metrics(self):
            return {"eval_accuracy": keras.metrics.SparseCategoricalAccuracy()}
        def update_metrics(self, metrics, features, outputs):
            metrics["eval_accuracy"].update_state(features["label_ids"], outputs["logits"])

Contract, method by method:

- `build_model(strategy)` → a Keras model, called inside `strategy.scope()` and inside the
  precision policy, so layers pick up `mixed_bfloat16` etc. The model's variables must exist
  when it returns (ALBERT models create them in `__init__`) and it must have
  `checkpoint_variables()` → ordered `{original checkpoint name: variable}` covering every
  trainable variable (heads + encoder): checkpoints, warm start and the optimizer's weight-decay
  exclusions all go by these names. A fine-tuning task builds its model with the run's
  `length_buckets.Batching.encoder_options` (the TPU's one-hot lookup, skipping padding).
- `train_dataset(input_context, batch_size)` → `tf.data.Dataset` of dicts of tensors, called once
  per input pipeline (`strategy.distribute_datasets_from_function`). `batch_size` is already the
  per-replica batch (global `--train_batch_size` / replicas). Shard by
  `input_context.input_pipeline_id` / `num_input_pipelines` when there are several files or
  workers, repeat forever, shuffle, and batch with `drop_remainder=True` (every replica and every
  accumulation micro-batch must have the same static batch size).
- `eval_dataset(input_context, batch_size)` → the same for evaluation. It may be finite (the
  evaluation stops when it ends, or after `max_eval_steps` batches) and may end with a smaller
  batch. `predict_dataset(input_context, batch_size)` → the test set's batches, built the same
  way (a fine-tuning task's one recipe for a finite set of its records).
- `call_model(model, features, training)` → dict of outputs. Default: `model(features,
  training=training)`. Floating outputs are cast to float32 by the loop before the loss and the
  metrics see them (so task code never deals with bfloat16/float16).
- The loss. The loop makes the loss of a global batch independent of how it is split over
  replicas and accumulation micro-batches: it first asks for `loss_normalizers(features)` on
  each replica's whole batch, sums them over replicas, then calls `compute_loss(features,
  outputs, normalizers)` on every micro-batch with those global sums and adds the results. So
  `compute_loss` must return this micro-batch's SHARE of the global loss: Σ over its examples /
  a global normalizer. The defaults give the mean over examples of `per_example_loss(features,
  outputs)` (a [B] float32 tensor); override `loss_normalizers`/`compute_loss` for weighted
  losses (the MLM loss divides by Σ masked_lm_weights).
- `build_metrics()` → `{name: keras.metrics.Metric}`, created under `strategy.scope()`; the loop
  builds one set for training (logged and summarised every loop, then reset) and one for
  evaluation. `update_metrics(metrics, features, outputs)` updates them in replica context
  (weighted metrics should pass `sample_weight`). `loss` and `global_step` are added by the
  loop; do not name a metric either.
- `eval_metric_name` / `eval_metric_higher_is_better`: which metric the
  evaluate-every-checkpoint loop uses to choose `model.ckpt-best`.
- Whole-set metrics (span F1, correlations: anything a streaming mean cannot give), as TF Model
  Garden's `aggregate_logs` / `reduce_aggregated_logs`: `eval_step_outputs(features, outputs)`
  names the tensors of a batch to bring to the host (replica context; gathered over the
  replicas), `aggregate_logs(state, step_outputs)` folds one global batch's numpy arrays into
  `state` (None before the first), and `reduce_aggregated_logs(state)` → the metrics dict.
  `training.prediction.aggregate` runs them over a finite set under the strategy: every task's
  dev evaluation and test prediction.
"""

import abc

import tensorflow as tf


class Task(abc.ABC):
    """A training job: model, datasets, loss and metrics. See the module docstring."""

    eval_metric_name = "loss"
    eval_metric_higher_is_better = False
    # Outputs the training loss reads in the model's compute dtype (bfloat16 under mixed
    # precision) and converts itself; every other floating output reaches losses and metrics
    # in float32.
    outputs_in_compute_dtype = ()

    @abc.abstractmethod
    def build_model(self, strategy):
        """A Keras model with `checkpoint_variables()`, its variables created."""

    @abc.abstractmethod
    def train_dataset(self, input_context, batch_size):
        """Per-replica training batches of exactly `batch_size` (drop_remainder), repeated."""

    def eval_dataset(self, input_context, batch_size):
        """Per-replica evaluation batches of `batch_size`."""
        raise NotImplementedError(f"{type(self).__name__} has no evaluation data")

    def predict_dataset(self, input_context, batch_size):
        """The test set's batches of `batch_size`, for the whole-set pass."""
        raise NotImplementedError(f"{type(self).__name__} has no test data")

    def call_model(self, model, features, training):
        return model(features, training=training)

    def per_example_loss(self, features, outputs):
        """[B] float32 losses; the default loss is their mean over the global batch."""
        raise NotImplementedError(
            f"{type(self).__name__} must define per_example_loss or compute_loss")

    def loss_normalizers(self, features):
        """Sums over this batch's examples that `compute_loss` divides by (summed over replicas)."""
        first = tf.nest.flatten(features)[0]
        return {"examples": tf.cast(tf.shape(first)[0], tf.float32)}

    def compute_loss(self, features, outputs, normalizers):
        """This (micro-)batch's share of the global-batch loss."""
        losses = tf.cast(self.per_example_loss(features, outputs), tf.float32)
        return tf.reduce_sum(losses) / normalizers["examples"]

    def build_metrics(self):
        return {}

    def update_metrics(self, metrics, features, outputs):
        del metrics, features, outputs

    def eval_step_outputs(self, features, outputs):
        """{name: [B, ...] tensor} of one batch for `aggregate_logs`."""
        raise NotImplementedError(f"{type(self).__name__} has no whole-set evaluation")

    def aggregate_logs(self, state, step_outputs):
        """`state` (None at first) with one global batch's numpy `step_outputs` folded in."""
        raise NotImplementedError(f"{type(self).__name__} has no whole-set evaluation")

    def reduce_aggregated_logs(self, state):
        """The whole set's metrics from the aggregated `state`."""
        raise NotImplementedError(f"{type(self).__name__} has no whole-set evaluation")


def shard(dataset, input_context):
    """This input pipeline's share of `dataset` when there are several (`input_context` None:
    the whole set, as `prediction.aggregate`'s global batches need)."""
    if input_context is not None and input_context.num_input_pipelines > 1:
        return dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset


class RecordFilesTask(Task):
    """A fine-tuning task on TFRecord files of its features (GLUE, RACE, tagging): the one
    recipe for the training, evaluation and test datasets of `train_file`, `eval_file` and
    `predict_file`, cut to the run's length buckets (`self.batching`, `self.max_seq_length`).

    Training batches: the records sharded, repeated and shuffled (`shuffle_buffer` serialized
    records), parsed, grouped by the run's batching. Evaluation and test batches: every record of
    the file in order (`dataset_of`). A task gives `parse_records` ([B] serialized records → a
    dict of [B, ...] tensors); one that parses otherwise overrides `train_examples` and
    `whole_set_batches`.
    """

    shuffle_buffer = 100

    def __init__(self, albert_config, max_seq_length, batching, train_file=None,
                 eval_file=None, predict_file=None):
        """`batching`: the run's `training.length_buckets.Batching`."""
        self.albert_config = albert_config
        self.max_seq_length = max_seq_length
        self.batching = batching
        self.train_file, self.eval_file, self.predict_file = train_file, eval_file, predict_file

    def parse_records(self, records):
        """A batch of serialized records as the model's features."""
        raise NotImplementedError(f"{type(self).__name__} defines parse_records or overrides "
                                  "train_examples and whole_set_batches")

    def records(self, path, input_context):
        """This input pipeline's share of the records of `path`."""
        return shard(tf.data.TFRecordDataset(path), input_context)

    def parsed_batches(self, records, batch_size, drop_remainder):
        return records.batch(batch_size, drop_remainder=drop_remainder).map(
            self.parse_records, num_parallel_calls=tf.data.AUTOTUNE)

    def train_examples(self, path, batch_size, input_context):
        """Parsed training examples (unbatched), repeated and shuffled."""
        records = self.records(path, input_context).repeat().shuffle(self.shuffle_buffer)
        return self.parsed_batches(records, batch_size, drop_remainder=True).unbatch()

    def whole_set_batches(self, path, batch_size, input_context):
        """Batches of every record of `path`, in order, before the length buckets trim them."""
        return self.parsed_batches(self.records(path, input_context), batch_size, False)

    def _file(self, name):
        path = getattr(self, name)
        if not path:
            raise ValueError(f"{type(self).__name__} has no {name}")
        return path

    def train_dataset(self, input_context, batch_size):
        examples = self.train_examples(self._file("train_file"), batch_size, input_context)
        return self.batching.train_batches(examples, batch_size,
                                           self.max_seq_length).prefetch(tf.data.AUTOTUNE)

    def eval_dataset(self, input_context, batch_size):
        return self.dataset_of(self._file("eval_file"), batch_size, input_context)

    def predict_dataset(self, input_context, batch_size):
        return self.dataset_of(self._file("predict_file"), batch_size, input_context)

    def dataset_of(self, path, batch_size, input_context=None):
        """Batches of every record of `path`, in order, cut to the run's buckets."""
        batches = self.whole_set_batches(path, batch_size, input_context)
        return self.batching.trim(batches, self.max_seq_length).prefetch(tf.data.AUTOTUNE)
