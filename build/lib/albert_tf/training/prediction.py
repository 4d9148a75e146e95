"""Whole-set prediction under any `tf.distribute` strategy, in input order.

GLUE, SQuAD and RACE all run a model over a finite set and need every output row back on the
host in the order of the input: each global batch is split over the replicas, the per-replica
outputs are gathered (`strategy.gather` concatenates the replicas' shards in replica order, so a
global batch comes back in its own order), and the batches are concatenated. Inputs that are
sharded per pipeline instead (`dataset_fn`) carry each row's position in an `order_key` output;
rows are sorted by it and padding rows (position < 0) dropped.

    arrays = prediction.predict(strategy, lambda batch: {"logits": model(batch)["logits"]},
                                dataset=eval_batches, what="Evaluating SST-2")
"""

import numpy as np
import tensorflow as tf

from albert_tf import progress


def iterate(strategy, replica_fn, dataset=None, dataset_fn=None, what="Predicting",
            total_batches=None):
    """Yields, per global batch, numpy arrays of every output of `replica_fn` (the replicas'
    rows gathered in order). `replica_fn`, `dataset`, `dataset_fn`: as `predict`."""
    if (dataset is None) == (dataset_fn is None):
        raise ValueError("give exactly one of dataset and dataset_fn")
    strategy = strategy or tf.distribute.get_strategy()
    distributed = (strategy.experimental_distribute_dataset(dataset) if dataset is not None
                   else strategy.distribute_datasets_from_function(dataset_fn))

    @tf.function(reduce_retracing=True)
    def step(batch):
        outputs = strategy.run(replica_fn, args=(batch,))
        return tf.nest.map_structure(lambda value: strategy.gather(value, axis=0), outputs)

    if total_batches is None and dataset is not None:
        cardinality = int(dataset.cardinality())
        total_batches = cardinality if cardinality > 0 else None
    batches = progress.ProgressLog(what, total_batches, unit="batches")
    for batch in distributed:
        yield {name: value.numpy() for name, value in step(batch).items()}
        batches.advance()
    batches.finish()


def predict(strategy, replica_fn, dataset=None, dataset_fn=None, order_key=None,
            what="Predicting", total_batches=None):
    """Numpy arrays of every output of `replica_fn` over the whole set, rows in input order.

    `replica_fn(batch)` → dict of tensors whose first dimension is the batch; it runs in replica
    context. Give `dataset` (global batches, split over the replicas) or `dataset_fn`
    (`input_context` → per-replica batches, as `distribute_datasets_from_function` takes).
    Progress (batches, rate, ETA) is logged as `what`.
    """
    collected = {}
    for outputs in iterate(strategy, replica_fn, dataset, dataset_fn, what, total_batches):
        for name, value in outputs.items():
            collected.setdefault(name, []).append(value)
    if not collected:
        raise ValueError(f"{what}: the dataset is empty")
    arrays = {name: np.concatenate(values, axis=0) for name, values in collected.items()}
    if order_key is None:
        return arrays
    real = arrays[order_key] >= 0
    order = np.argsort(arrays[order_key][real], kind="stable")
    return {name: value[real][order] for name, value in arrays.items()}
