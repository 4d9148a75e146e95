"""Under mixed_bfloat16 a bias gradient is summed over every token row in float32 and rounded
to bfloat16 once, as PyTorch's bfloat16 autocast does. TensorFlow's own BiasAddGrad on CPU sums
in bfloat16 (about 15% relative error at 32,768 rows), which this test would catch.

The bound: the gradient is the float32 sum of bfloat16 upstream values, rounded once to bfloat16
(8 significant bits), so each element is within 2^-9 of its exact value relative, plus a float32
summation error of at most rows * 2^-24 relative to the sum of magnitudes (< 1e-3 here); the
norm of the error is held to 2^-8 of the norm of the exact sum.
"""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling import layers

ROWS, WIDTH = 16384, 32


def _bias_gradient(dtype_policy, graph):
    rng = np.random.default_rng(0)
    dense = layers.Dense(WIDTH, WIDTH, 0.02, dtype=dtype_policy)
    inputs = tf.constant(rng.standard_normal((ROWS // 64, 64, WIDTH)), tf.float32)
    upstream = rng.standard_normal((ROWS // 64, 64, WIDTH)).astype(np.float32) + 0.5

    def step():
        with tf.GradientTape() as tape:
            outputs = dense(inputs, training=True)
            loss = tf.reduce_sum(tf.cast(outputs, tf.float32) * upstream)
        return tape.gradient(loss, dense.bias)

    gradient = (tf.function(step) if graph else step)().numpy().astype(np.float64)
    sent = tf.cast(tf.cast(upstream, tf.as_dtype(dense.compute_dtype)), tf.float64).numpy()
    return gradient, sent.reshape(-1, WIDTH).sum(axis=0)


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("dtype_policy", ["mixed_bfloat16", "float32"])
def test_bias_gradient_is_summed_in_float32(dtype_policy, graph):
    gradient, exact = _bias_gradient(dtype_policy, graph)
    bound = 2.0 ** -8 if dtype_policy == "mixed_bfloat16" else 1e-5
    assert np.linalg.norm(gradient - exact) / np.linalg.norm(exact) <= bound
