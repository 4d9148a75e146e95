"""Logical-CPU replicas (`--cpu_replicas`) read one ordinary tf.data iterator of global batches
and each takes its block of rows; other strategies keep tf.distribute's distributed datasets.

The two-replica cases run in a fresh process: logical devices must be set before TF starts.
"""

import json
import subprocess
import sys

import tensorflow as tf

from albert_tf.training import replica_input
from tests.conftest import script_env

_TWO_REPLICAS = r"""
import json
import tensorflow as tf
from albert_tf.training import replica_input, strategy as strategy_lib

strategy = strategy_lib.resolve_strategy(cpu_replicas=2)
inputs = replica_input.ReplicaInput(strategy)
shapes = []

def replica_fn(rows):
    shapes.append(rows["x"].shape.as_list())
    return rows

@tf.function
def step(batch):
    rows = inputs.run(replica_fn, batch)
    parts = strategy.experimental_local_results(rows)
    return (strategy.gather(rows["x"], axis=0), [tf.shape(part["x"])[0] for part in parts],
            [part["scale"] for part in parts])

def make(unused_context, batch_size, drop_remainder=False):
    batches = tf.data.Dataset.range(10).map(lambda i: {"x": tf.fill([3], i)}).batch(
        batch_size, drop_remainder=drop_remainder)
    return batches.map(lambda batch: dict(batch, scale=tf.constant(3)))  # one value per batch

dataset = inputs.datasets_from_function(make, 4)
iterator = iter(dataset)
batches = [step(batch) for batch in iterator]
static = inputs.datasets_from_function(
    lambda context, size: make(context, size, drop_remainder=True), 4)
traced = {}
for name, spec in (("static_size", static.element_spec), ("unknown_size", dataset.element_spec)):
    del shapes[:]
    tf.function(step.python_function).get_concrete_function(spec)
    traced[name] = list(shapes)
print("RESULT " + json.dumps({
    "one_iterator": inputs.one_iterator,
    "plain_dataset": isinstance(dataset, tf.data.Dataset),
    "autotune": dataset.options().autotune.enabled,
    "checkpointable": isinstance(iterator, tf.__internal__.tracking.Trackable),
    "gathered": [gathered.numpy()[:, 0].tolist() for gathered, _, _ in batches],
    "rows_per_replica": [[int(n) for n in counts] for _, counts, _ in batches],
    "scales": [[int(n) for n in scales] for _, _, scales in batches],
    "traced": traced}))
"""


def test_two_logical_cpus_take_their_blocks_of_one_iterators_batches():
    done = subprocess.run([sys.executable, "-c", _TWO_REPLICAS], env=script_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["one_iterator"] and result["plain_dataset"] and result["checkpointable"]
    assert result["autotune"] is False
    # The replicas' rows, gathered in replica order, are the batch in its own order.
    assert result["gathered"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert result["rows_per_replica"] == [[2, 2], [2, 2], [1, 1]]
    assert result["scales"] == [[3, 3]] * 3  # a value of the whole batch: every replica reads it
    # Batches of unknown size trace with an unknown row count; batches of static size 4
    # (drop_remainder, as in training) with two rows each: the training kernels need that.
    assert result["traced"] == {"unknown_size": [[None, 3], [None, 3]],
                                "static_size": [[2, 3], [2, 3]]}


def test_one_device_and_its_datasets_are_left_to_tf_distribute():
    strategy = tf.distribute.get_strategy()
    inputs = replica_input.ReplicaInput(strategy)
    assert not inputs.one_iterator
    assert not replica_input.reads_one_iterator(tf.distribute.OneDeviceStrategy("/cpu:0"))
    dataset = inputs.datasets_from_function(
        lambda context, size: tf.data.Dataset.range(6).batch(size), 3)
    assert dataset.options().autotune.enabled is False
    assert [list(batch.numpy()) for batch in dataset] == [[0, 1, 2], [3, 4, 5]]
