"""A toy task for the training-loop tests: a 2-layer classifier on a fixed synthetic problem.

Also a subprocess entry point (`python tests/training_toys.py <mode> ...`) for the tests that
need a fresh TF runtime: several logical CPUs (MirroredStrategy) or TF_CONFIG (multi-worker).
"""

import collections
import json
import os
import sys

import keras
import numpy as np
import tensorflow as tf

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.training import task as task_lib  # noqa: E402

FEATURES = 4


class ToyModel(keras.Model):
    """Dense(16, tanh) → Dense(2); names in the original style (`toy/dense/kernel`, ...)."""

    def __init__(self, seed=0, unused_pooler=False):
        """`unused_pooler`: also a layer no output reads, as the pooler under SQuAD's heads."""
        super().__init__()
        init = keras.initializers.GlorotUniform(seed=seed)
        self.hidden = keras.layers.Dense(16, activation="tanh", kernel_initializer=init)
        self.logits = keras.layers.Dense(2, kernel_initializer=keras.initializers.GlorotUniform(
            seed=seed + 1))
        self.hidden.build((None, FEATURES))
        self.logits.build((None, 16))
        self.pooler = None
        if unused_pooler:
            self.pooler = keras.layers.Dense(16, kernel_initializer=keras.initializers.GlorotUniform(
                seed=seed + 2), name="pooler")
            self.pooler.build((None, 16))

    def call(self, features, training=False):
        return {"logits": self.logits(self.hidden(features["x"]))}

    def checkpoint_variables(self):
        names = collections.OrderedDict([
            ("toy/dense/kernel", self.hidden.kernel), ("toy/dense/bias", self.hidden.bias),
            ("output_weights", self.logits.kernel), ("output_bias", self.logits.bias)])
        if self.pooler is not None:
            names.update([("toy/pooler/kernel", self.pooler.kernel),
                          ("toy/pooler/bias", self.pooler.bias)])
        return names


def toy_examples(n=1024, nan_from=None, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    if nan_from is not None:
        x[nan_from:] = np.nan
    return {"x": x, "y": y}


class ToyTask(task_lib.Task):
    """Learnable in a few dozen steps; `shuffle=False` makes the batch sequence deterministic."""

    eval_metric_name = "accuracy"
    eval_metric_higher_is_better = True

    def __init__(self, shuffle=True, nan_from=None, repeat=True, unused_pooler=False):
        self.shuffle, self.nan_from, self.repeat = shuffle, nan_from, repeat
        self.unused_pooler = unused_pooler

    def build_model(self, strategy):
        return ToyModel(unused_pooler=self.unused_pooler)

    def _examples(self, input_context):
        dataset = tf.data.Dataset.from_tensor_slices(toy_examples(nan_from=self.nan_from))
        return dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)

    def train_dataset(self, input_context, batch_size):
        dataset = self._examples(input_context)
        if self.repeat:
            dataset = dataset.repeat()
        if self.shuffle:
            dataset = dataset.shuffle(256, seed=1)
        return dataset.batch(batch_size, drop_remainder=True)

    def eval_dataset(self, input_context, batch_size):
        return self._examples(input_context).batch(batch_size)

    def per_example_loss(self, features, outputs):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=features["y"],
                                                              logits=outputs["logits"])

    def build_metrics(self):
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def update_metrics(self, metrics, features, outputs):
        metrics["accuracy"].update_state(features["y"], outputs["logits"])


def _config(output_dir, **overrides):
    from albert_tf.training import loop
    values = dict(output_dir=output_dir, train_batch_size=16, num_train_steps=6,
                  num_warmup_steps=0, learning_rate=0.01, optimizer="lamb",
                  save_checkpoints_steps=3, iterations_per_loop=3)
    values.update(overrides)
    return loop.TrainingConfig(**values)


def _variables(trainer):
    return {name: v.numpy().tolist() for name, v in trainer.variables_by_name.items()}


def main(argv):
    """`mirrored <out>`: the same steps under the default and a 2-CPU MirroredStrategy.
    `worker <out>`: one multi-worker worker (TF_CONFIG set by the caller)."""
    mode, output_dir = argv[1], argv[2]
    from albert_tf.training import loop
    if mode == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        results = {}
        for name, strategy in (("default", tf.distribute.get_strategy()),
                               ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
            trainer = loop.Trainer(ToyTask(shuffle=False), strategy,
                                   _config(os.path.join(output_dir, name)))
            trainer.train()
            results[name] = {"replicas": strategy.num_replicas_in_sync,
                             "variables": _variables(trainer),
                             "slots": {k: v.numpy().tolist()
                                       for k, v in trainer.optimizer.slot_variables().items()}}
        print("RESULT " + json.dumps(results))
    elif mode == "worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        trainer = loop.Trainer(ToyTask(shuffle=False), strategy, _config(output_dir))
        trainer.train()
        task_id = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
        with open(os.path.join(output_dir, f"worker{task_id}.json"), "w") as writer:
            json.dump({"variables": _variables(trainer), "step": trainer.global_step,
                       "replicas": strategy.num_replicas_in_sync}, writer)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv)
