"""`python tests/resume_mirrored.py <out> <step>`: the toy task under a 2-CPU MirroredStrategy
(shuffled, 2 accumulation micro-batches) trained to step 40, rewound to `model.ckpt-<step>` as
a run killed after it would leave it, and resumed by a new trainer; prints `RESULT <json>`
with the tensors of the final checkpoint that differ. Run in a fresh process: logical devices
must be set before TensorFlow starts."""

import json
import os
import sys

import tensorflow as tf

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf import checkpoints  # noqa: E402
from albert_tf.training import loop  # noqa: E402
from tests import training_toys  # noqa: E402


def main(output_dir, step):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    config = training_toys._config(output_dir, num_train_steps=40, save_checkpoints_steps=10,
                                   iterations_per_loop=10, keep_checkpoint_max=5,
                                   gradient_accumulation_steps=2)
    loop.Trainer(training_toys.ToyTask(), strategy, config).train()
    final = os.path.join(output_dir, "model.ckpt-40")
    reference = checkpoints.read_tensors(final)
    checkpoints.write_checkpoint_state(output_dir, os.path.join(output_dir, f"model.ckpt-{step}"))
    resumed = loop.Trainer(training_toys.ToyTask(), strategy, config)
    resumed.train()
    again = checkpoints.read_tensors(final)
    print("RESULT " + json.dumps({
        "replicas": strategy.num_replicas_in_sync,
        "checkpointable": resumed.checkpoints.iterators_checkpointable,
        "differ": [name for name in reference
                   if reference[name].tobytes() != again[name].tobytes()],
        "tensors": len(reference)}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
