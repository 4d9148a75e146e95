"""How a strategy's replicas get their share of each global batch.

Replicas on devices of their own (GPUs, TPU cores, other workers) read tf.distribute's
distributed datasets: one pipeline per worker, its batches handed out to the devices.

Logical CPUs of one host (`--cpu_replicas`) read ONE ordinary tf.data iterator of global batches
instead, and inside the step each replica takes its rows of the batch (replica i the i-th block
of `global / replicas` rows; a short last batch in blocks of ceil(rows / replicas), so the last
replicas may get fewer rows or none). Why not the distributed dataset there:
- tf.distribute's multi-device iterator builds a dataset per device with default options, so
  each runs tf.data's autotuning thread, and the iterator's destructor waits for those
  threads: 14–16 s at the end of training in 2 of 7 short pretraining runs at the demo's
  settings (the pipelines here run without autotuning, `pipeline_options`; these per-device
  datasets could not be given that option).
- An ordinary iterator is saved with every checkpoint, so a resumed run restores its input
  position instead of skipping the batches done.
- The replicas see exactly one device's batches (the same rows in the same order), whatever
  the task's batching (length buckets, RACE's padded groups).
The batch lives in host memory, which every logical CPU shares: nothing is copied per replica.
"""

import tensorflow as tf

from albert_tf.training import pipeline_options

# What a task's pipeline sees when one iterator feeds every replica: the view of one device.
_ONE_PIPELINE = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                           num_replicas_in_sync=1)


def reads_one_iterator(strategy):
    """True for MirroredStrategy over CPUs of this host (`--cpu_replicas`): its replicas read
    one iterator of global batches."""
    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        return False
    devices = strategy.extended.worker_devices
    return len(devices) > 1 and all(
        tf.DeviceSpec.from_string(device).device_type == "CPU" for device in devices)


class ReplicaInput:
    """The datasets of one strategy, and the call that hands each replica its rows."""

    def __init__(self, strategy):
        self.strategy = strategy
        self.one_iterator = reads_one_iterator(strategy)

    def datasets_from_function(self, dataset_fn, global_batch_size):
        """`dataset_fn(input_context, batch_size)` (a task's `train_dataset` or `eval_dataset`)
        as this strategy's input, without tf.data autotuning: per input pipeline at the
        replicas' batch size, or one pipeline of global batches (see the module docstring)."""
        if self.one_iterator:
            return pipeline_options.without_autotune(dataset_fn(_ONE_PIPELINE, global_batch_size))

        def per_pipeline(input_context):
            batch_size = input_context.get_per_replica_batch_size(global_batch_size)
            return pipeline_options.without_autotune(dataset_fn(input_context, batch_size))
        return self.strategy.distribute_datasets_from_function(per_pipeline)

    def distribute_dataset(self, dataset):
        """`dataset` (of global batches) as this strategy's input, without tf.data autotuning."""
        dataset = pipeline_options.without_autotune(dataset)
        if self.one_iterator:
            return dataset
        return self.strategy.experimental_distribute_dataset(dataset)

    def run(self, replica_fn, batch):
        """`strategy.run(replica_fn, args=(batch,))` where each replica gets its own rows."""
        if self.one_iterator:
            return self.strategy.run(lambda whole: replica_fn(_replica_rows(whole)), args=(batch,))
        return self.strategy.run(replica_fn, args=(batch,))


def _replica_rows(batch):
    """This replica's block of rows of every tensor in `batch`. A batch of static size that the
    replicas divide keeps a static shape (the training kernels of `modeling.fused` need one)."""
    context = tf.distribute.get_replica_context()
    replicas = context.num_replicas_in_sync
    replica = tf.cast(context.replica_id_in_sync_group, tf.int32)

    def rows(tensor):
        if tensor.shape.rank == 0:  # not batched: every replica reads it
            return tensor
        size = tensor.shape[0]
        if size is not None and size % replicas == 0:
            share = size // replicas
            return tf.slice(tensor, [replica * share] + [0] * (tensor.shape.rank - 1),
                            [share] + [-1] * (tensor.shape.rank - 1))
        size = tf.shape(tensor)[0]
        share = -(-size // replicas)
        begin = tf.minimum(replica * share, size)
        return tensor[begin:tf.minimum(begin + share, size)]
    return tf.nest.map_structure(rows, batch)
