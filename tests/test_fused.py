"""The training GELU and LayerNorm (`modeling.fused`) against the specification's formulas and
their derivatives and against TensorFlow's and Keras's own ops, and `layers.Dense`'s and
`layers.LayerNorm`'s choice of them: only under training, only for static shapes, never in an
inference graph."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling import fused, layers

C = np.sqrt(2 / np.pi)


def reference_gelu(x):
    return 0.5 * x * (1 + np.tanh(C * (x + 0.044715 * x ** 3)))


def reference_slope(x):
    """d/dx of 0.5·x·(1 + tanh(u)), u = √(2/π)(x + 0.044715x³), worked by hand."""
    t = np.tanh(C * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * C * (1 + 3 * 0.044715 * x ** 2)


def gradient(function, x, upstream):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = function(x)
    return y, tape.gradient(y, x, output_gradients=tf.constant(upstream, y.dtype))


def test_value_and_gradient_match_the_formula_and_tensorflows_gelu():
    x = np.linspace(-6, 6, 97).astype(np.float32).reshape(1, 97)
    upstream = np.random.default_rng(0).normal(size=x.shape).astype(np.float32)
    y, dx = gradient(fused.gelu, x, upstream)
    np.testing.assert_allclose(y, reference_gelu(x.astype(np.float64)), atol=1e-6)
    # float32's 1 + tanh(u) near tanh = -1 loses digits: TensorFlow's own gradient of
    # tf.nn.gelu is off the float64 slope by 4.4e-6 on these points, as this one is.
    np.testing.assert_allclose(dx, upstream * reference_slope(x.astype(np.float64)), atol=1e-5)
    plain_y, plain_dx = gradient(lambda v: tf.nn.gelu(v, approximate=True), x, upstream)
    np.testing.assert_allclose(y, plain_y, atol=1e-6)
    np.testing.assert_allclose(dx, plain_dx, atol=1e-5)


def test_bfloat16_in_bfloat16_out_rounded_once():
    x = np.linspace(-4, 4, 33).astype(np.float32).reshape(1, 33)
    y, dx = gradient(fused.gelu, tf.cast(x, tf.bfloat16), np.ones_like(x))
    assert y.dtype == tf.bfloat16 and dx.dtype == tf.bfloat16
    exact_x = tf.cast(tf.cast(x, tf.bfloat16), tf.float64).numpy()
    # one rounding to bfloat16 (8 significant bits): relative error at most 2^-8
    np.testing.assert_allclose(tf.cast(y, tf.float64), reference_gelu(exact_x), rtol=2 ** -8,
                               atol=1e-6)
    np.testing.assert_allclose(tf.cast(dx, tf.float64), reference_slope(exact_x), rtol=2 ** -8,
                               atol=1e-6)


def xla_calls(graph):
    """Names of the calls in `graph` (and the functions it holds) that XLA must compile."""
    found = [op.name for op in graph.get_operations()
             if "_XlaMustCompile" in op.node_def.attr and op.get_attr("_XlaMustCompile")]
    for function in graph._functions.values():
        found += [node.name for node in function.definition.node_def
                  if node.attr["_XlaMustCompile"].b]
    return found


@pytest.mark.parametrize("training, shape, fused", [
    (True, [4, 8], True), (False, [4, 8], False), (True, [None, 8], False)])
def test_dense_fuses_only_a_training_call_of_static_shape(training, shape, fused):
    dense = layers.Dense(8, 16, 0.02, layers.get_activation("gelu"))
    call = tf.function(lambda x: dense(x, training=training)).get_concrete_function(
        tf.TensorSpec(shape, tf.float32))
    assert bool(xla_calls(call.graph)) == fused
    x = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    expected = reference_gelu(x.astype(np.float64) @ dense.kernel.numpy() + dense.bias.numpy())
    np.testing.assert_allclose(call(tf.constant(x)), expected, atol=1e-5)


def reference_layer_norm(x, gamma, beta, epsilon=1e-12):
    mean = x.mean(-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(-1, keepdims=True) + epsilon) + beta


def test_layer_norm_value_and_gradients_match_the_formula_and_keras():
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(3, 5, 16)) * 3 + 1).astype(np.float32)
    gamma, beta = (rng.normal(size=16).astype(np.float32) for _ in range(2))
    upstream = rng.normal(size=x.shape).astype(np.float32)

    def value_and_gradients(function):
        tensors = [tf.constant(v) for v in (x, gamma, beta)]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            y = function(*tensors)
        return y, tape.gradient(y, tensors, output_gradients=tf.constant(upstream))

    y, grads = value_and_gradients(lambda v, g, b: fused.layer_norm(v, g, b, 1e-12))
    np.testing.assert_allclose(y, reference_layer_norm(x.astype(np.float64), gamma, beta),
                               atol=2e-5)
    norm = layers.LayerNorm(16)
    keras_y, keras_grads = value_and_gradients(
        lambda v, g, b: (norm.gamma.assign(g), norm.beta.assign(b), norm(v))[-1])
    np.testing.assert_allclose(y, keras_y, atol=2e-5)
    # Keras reads gamma and beta from its variables, not from these tensors; their gradients
    # follow from the formula: d/dbeta = sum of upstream, d/dgamma = sum of upstream * x-hat.
    normalized = reference_layer_norm(x.astype(np.float64), 1.0, 0.0)
    np.testing.assert_allclose(grads[2], upstream.sum((0, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[1], (upstream * normalized).sum((0, 1)), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(grads[0], keras_grads[0], atol=2e-5)


@pytest.mark.parametrize("training, shape, fused_call", [
    (True, [4, 16], True), (False, [4, 16], False), (True, [None, 16], False)])
def test_layer_norm_fuses_only_a_training_call_of_static_shape(training, shape, fused_call):
    norm = layers.LayerNorm(16)
    call = tf.function(lambda x: norm(x, training=training)).get_concrete_function(
        tf.TensorSpec(shape, tf.float32))
    assert bool(xla_calls(call.graph)) == fused_call
    x = np.random.default_rng(3).normal(size=(4, 16)).astype(np.float32)
    np.testing.assert_allclose(call(tf.constant(x)), reference_layer_norm(x, 1.0, 0.0), atol=2e-5)


def test_masked_lm_cross_entropy_matches_the_formula_and_its_gradient():
    rng = np.random.default_rng(4)
    logits = (rng.normal(size=(3, 4, 50)) * 4).astype(np.float32)
    labels = rng.integers(0, 50, size=(3, 4)).astype(np.int32)
    labels[0] = logits[0].argmax(-1)  # some rows predicted right
    upstream = rng.normal(size=(3, 4)).astype(np.float32)
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        losses, correct = fused.sparse_cross_entropy(x, tf.constant(labels))
    gradient_of_logits = tape.gradient(losses, x, output_gradients=tf.constant(upstream))
    wide = logits.astype(np.float64)
    log_probs = wide - np.log(np.exp(wide).sum(-1, keepdims=True))
    one_hot = np.eye(50)[labels]
    np.testing.assert_allclose(losses, -(one_hot * log_probs).sum(-1), atol=1e-5)
    np.testing.assert_allclose(gradient_of_logits,
                               upstream[..., None] * (np.exp(log_probs) - one_hot), atol=1e-6)
    np.testing.assert_array_equal(correct, (logits.argmax(-1) == labels).astype(np.float32))
    assert 4 <= correct.numpy().sum() < 12


def test_masked_lm_arg_max_takes_the_first_of_tied_maxima_as_tf_argmax():
    """bfloat16 logits tie often; a label tied with an earlier maximum is not the arg-max."""
    logits = tf.constant([[[1.0, 3.0, 3.0, 0.5], [3.0, 3.0, 1.0, 0.0], [0.0, 1.0, 2.0, 2.0]]],
                         tf.bfloat16)
    labels = tf.constant([[2, 0, 3]], tf.int32)
    _, correct = fused.sparse_cross_entropy(logits, labels)
    expected = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), labels), tf.float32)
    np.testing.assert_array_equal(correct, expected)
    np.testing.assert_array_equal(correct, [[0.0, 1.0, 0.0]])


def test_masked_lm_loss_reads_bfloat16_logits_in_float32_and_gives_bfloat16_gradients():
    rng = np.random.default_rng(6)
    logits = tf.cast(rng.normal(size=(2, 3, 40)) * 4, tf.bfloat16)
    labels = tf.constant(rng.integers(0, 40, size=(2, 3)), tf.int32)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        losses, _ = fused.sparse_cross_entropy(logits, labels)
    gradient = tape.gradient(losses, logits)
    assert losses.dtype == tf.float32 and gradient.dtype == tf.bfloat16
    wide = tf.cast(logits, tf.float64).numpy()
    log_probs = wide - np.log(np.exp(wide).sum(-1, keepdims=True))
    one_hot = np.eye(40)[labels.numpy()]
    np.testing.assert_allclose(losses, -(one_hot * log_probs).sum(-1), atol=1e-5)
    np.testing.assert_allclose(tf.cast(gradient, tf.float32), np.exp(log_probs) - one_hot, atol=4e-3)


def test_pretraining_loss_and_accuracy_are_the_same_fused_or_not():
    """The original's log_softmax · one_hot and tf.argmax (dynamic shapes) and the fused
    kernel (static)."""
    from albert_tf.pretraining import task
    rng = np.random.default_rng(5)
    features = {"masked_lm_ids": rng.integers(0, 30, size=(2, 3)).astype(np.int32),
                "masked_lm_weights": np.array([[1, 1, 0], [1, 0, 0]], np.float32)}
    logits = rng.normal(size=(2, 3, 30)).astype(np.float32)
    features["masked_lm_ids"][1] = logits[1].argmax(-1)
    fused_losses, fused_correct, _ = task.masked_lm_outcomes(features, {"mlm_logits": tf.constant(logits)})
    dynamic = tf.function(lambda t: task.masked_lm_outcomes(features, {"mlm_logits": t})[:2])
    plain = dynamic.get_concrete_function(tf.TensorSpec([None, 3, 30], tf.float32))
    assert not xla_calls(plain.graph)
    plain_losses, plain_correct = plain(tf.constant(logits))
    np.testing.assert_allclose(fused_losses, plain_losses, atol=1e-5)
    np.testing.assert_array_equal(fused_correct, plain_correct)
    assert 3 <= plain_correct.numpy().sum() < 6


def test_masked_lm_head_trains_in_the_compute_dtype_and_infers_in_float32():
    """Under mixed precision the training logits (and their products) are bfloat16, read by
    the fused loss; evaluation and exports keep float32 logits."""
    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import pretraining
    rng = np.random.default_rng(7)
    config = AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32)
    table = tf.Variable(rng.normal(size=(30, 8)).astype(np.float32))
    sequence = tf.constant(rng.normal(size=(2, 5, 16)).astype(np.float32))
    positions = tf.constant([[0, 3], [1, 4]])
    for policy, training_dtype in (("mixed_bfloat16", tf.bfloat16), ("float32", tf.float32)):
        head = pretraining.MaskedLMHead(config, table, dtype=policy)
        trained = head(sequence, positions, training=True)
        inferred = head(sequence, positions, training=False)
        assert trained.dtype == training_dtype and inferred.dtype == tf.float32
        assert trained.shape == inferred.shape == (2, 2, 30)
        np.testing.assert_allclose(tf.cast(trained, tf.float32), inferred, atol=0.1, rtol=0.02)
