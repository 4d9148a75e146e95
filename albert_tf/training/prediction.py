"""The one whole-set pass: a model over a finite dataset, each batch folded into the task's state.

Dev evaluation and test prediction of every task (GLUE, SQuAD labelled or not, RACE, tagging)
run `aggregate`, as TF Model Garden's `aggregate_logs` / `reduce_aggregated_logs`: each global
batch is split over the strategy's replicas, the task's `eval_step_outputs` are gathered back
in the batch's own order (`strategy.gather` concatenates the replicas' shards in replica order)
and handed, as numpy arrays, to `task.aggregate_logs`. So every task is scored alike under any
strategy, and progress (batches, rate, ETA) is logged the same way.

    state = prediction.aggregate(task, model, task.eval_dataset(None, 32), strategy)
    metrics = task.reduce_aggregated_logs(state)
"""

import tensorflow as tf

from albert_tf import progress
from albert_tf.training import replica_input


def as_float32(structure, keep=()):
    """Floating tensors of a model's outputs in float32: losses, metrics and host-side scoring
    never see bfloat16 or float16, except the outputs named in `keep` (of a dict), which the
    loss converts itself."""
    def convert(t):
        return tf.cast(t, tf.float32) if t.dtype in (tf.bfloat16, tf.float16) else t

    if keep:
        return {name: value if name in keep else tf.nest.map_structure(convert, value)
                for name, value in structure.items()}
    return tf.nest.map_structure(convert, structure)


def aggregate(task, model, dataset, strategy=None, what="Evaluating"):
    """`task.aggregate_logs` state over `dataset` (finite, of global batches) run through
    `model` under `strategy` (default: the current one); reduce it with
    `task.reduce_aggregated_logs` or the task's own prediction writer."""
    strategy = strategy or tf.distribute.get_strategy()
    inputs = replica_input.ReplicaInput(strategy)

    def replica_fn(batch):
        outputs = as_float32(task.call_model(model, batch, training=False))
        return task.eval_step_outputs(batch, outputs)

    @tf.function(reduce_retracing=True, autograph=False)
    def step(batch):
        outputs = inputs.run(replica_fn, batch)
        return tf.nest.map_structure(lambda value: strategy.gather(value, axis=0), outputs)

    cardinality = int(dataset.cardinality())
    batches = progress.ProgressLog(what, cardinality if cardinality > 0 else None, unit="batches")
    state = None
    for batch in inputs.distribute_dataset(dataset):
        state = task.aggregate_logs(state, {name: value.numpy()
                                            for name, value in step(batch).items()})
        batches.advance()
    if state is None:
        raise ValueError(f"{what}: the dataset is empty")
    batches.finish()
    return state
