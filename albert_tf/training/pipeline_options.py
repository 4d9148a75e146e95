"""tf.data options every training, evaluation and prediction pipeline gets.

tf.data's autotuning runs a model thread beside each iterator, and an iterator's destructor
waits for that thread. On a 2-core machine that wait was seen to take 24–59 s at the end of a
training loop (between the last checkpoint and the evaluation, or at exit) in 11 of the 57
processes watched (a gdb stack: the main thread in `IteratorResource`'s destructor, the
`tf_data_model` thread in `Model::OptimizeLoop`). The pipelines here are a few parallel maps
and a prefetch whose work is small beside a training step, so they run without autotuning:
`AUTOTUNE` parallelism then means one call per schedulable core, and `prefetch(AUTOTUNE)`
grows its buffer when it runs dry. No model thread is started, so none is waited for.
"""

import tensorflow as tf


def without_autotune(dataset):
    """`dataset` with tf.data's autotuning model off."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
