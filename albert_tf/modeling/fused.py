"""The tanh-GELU, LayerNorm and masked-LM cross-entropy of training, each forward and each
gradient one XLA-compiled kernel.

TensorFlow runs `tf.nn.gelu(x, approximate=True)` as about eight element-wise ops forward and a
dozen backward, Keras's LayerNormalization as about ten each way, and the original's loss as a
log-softmax, a one-hot product and their gradients over [B·M, vocabulary]; each op is a full
pass over memory. In the small model's pretraining step on a CPU that was about a third of the
step (bench/RESULTS.md). Here XLA compiles each forward and each gradient into one loop,
computed in float32 whatever the input dtype and rounded once, and the gradients recompute what
they need from the inputs instead of keeping it. Only training calls of static shape take
these (XLA compiles once per shape; `layers.Dense` and `layers.LayerNorm` with training=True,
`pretraining.task.masked_lm_outcomes`): inference keeps the plain ops, which oneDNN fuses with
the product before them and which converters such as TFLite's know.
"""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


def _tanh_term(x):
    return tf.math.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x * x * x))


@tf.function(jit_compile=True)
def _gelu_forward(x):
    x32 = tf.cast(x, tf.float32)
    return tf.cast(0.5 * x32 * (1.0 + _tanh_term(x32)), x.dtype)


@tf.function(jit_compile=True)
def _gelu_gradient(upstream, x):
    x32 = tf.cast(x, tf.float32)
    tanh = _tanh_term(x32)
    slope = 0.5 * (1.0 + tanh) + 0.5 * x32 * (1.0 - tanh * tanh) * _SQRT_2_OVER_PI * (
        1.0 + 3.0 * _CUBIC * x32 * x32)
    return tf.cast(tf.cast(upstream, tf.float32) * slope, upstream.dtype)


@tf.custom_gradient
def gelu(x):
    """0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the original's gelu."""
    return _gelu_forward(x), lambda upstream: _gelu_gradient(upstream, x)


def _normalized(x, epsilon):
    """(x - mean) / sqrt(variance + epsilon) over the last axis, and that inverse deviation."""
    centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
    inverse = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
    return centered * inverse, inverse


@tf.function(jit_compile=True)
def _layer_norm_forward(x, gamma, beta, epsilon):
    normalized, _ = _normalized(tf.cast(x, tf.float32), epsilon)
    return normalized * gamma + beta


@tf.function(jit_compile=True)
def _layer_norm_gradient(upstream, x, gamma, epsilon):
    width = x.shape[-1]
    rows = tf.reshape(tf.cast(x, tf.float32), [-1, width])
    upstream = tf.reshape(upstream, [-1, width])
    normalized, inverse = _normalized(rows, epsilon)
    scaled = upstream * gamma
    inputs = inverse * (scaled - tf.reduce_mean(scaled, axis=-1, keepdims=True) - normalized
                        * tf.reduce_mean(scaled * normalized, axis=-1, keepdims=True))
    return (tf.cast(tf.reshape(inputs, tf.shape(x)), x.dtype),
            tf.reduce_sum(upstream * normalized, axis=0), tf.reduce_sum(upstream, axis=0))


def layer_norm(x, gamma, beta, epsilon):
    """gamma · (x - mean) / sqrt(variance + epsilon) + beta over the last axis, in float32."""

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        return (_layer_norm_forward(x, gamma, beta, epsilon),
                lambda upstream: _layer_norm_gradient(upstream, x, gamma, epsilon))

    return normalize(x, gamma, beta)


def _log_normalizer(logits):
    """log Σ exp(logits) over the last axis, computed from the row's maximum."""
    peak = tf.reduce_max(logits, axis=-1, keepdims=True)
    return peak + tf.math.log(tf.reduce_sum(tf.exp(logits - peak), axis=-1, keepdims=True))


@tf.function(jit_compile=True)
def _cross_entropy_forward(logits, labels):
    """Per row, in float32 whatever the logits' dtype: the loss, the log-normalizer, and whether
    arg-max (the first of tied maxima, as tf.argmax) is the label; the last in the same pass,
    since a separate arg-max over [B·M, vocabulary] cost more than the loss."""
    logits = tf.cast(logits, tf.float32)
    log_normalizer = _log_normalizer(logits)
    picked = tf.gather(logits, labels[..., None], batch_dims=logits.shape.rank - 1)
    peak = tf.reduce_max(logits, axis=-1, keepdims=True)
    earlier = tf.range(logits.shape[-1]) < labels[..., None]
    peak_before_label = tf.reduce_any(tf.logical_and(tf.equal(logits, peak), earlier), axis=-1,
                                      keepdims=True)
    correct = tf.logical_and(tf.equal(picked, peak), tf.logical_not(peak_before_label))
    return (tf.squeeze(log_normalizer - picked, axis=-1), log_normalizer,
            tf.squeeze(tf.cast(correct, tf.float32), axis=-1))


@tf.function(jit_compile=True)
def _cross_entropy_gradient(upstream, logits, log_normalizer, labels):
    """softmax − one_hot, scaled by `upstream`, from the forward's log-normalizer (one
    exponential per logit), rounded once to the logits' dtype."""
    probabilities = tf.exp(tf.cast(logits, tf.float32) - log_normalizer)
    return tf.cast(upstream[..., None] * (probabilities - tf.one_hot(labels, logits.shape[-1])),
                   logits.dtype)


def sparse_cross_entropy(logits, labels):
    """−log softmax(logits)[label] over the last axis, in float32 (logits of any float dtype,
    int32 labels; the gradient has the logits' dtype), and whether tf.argmax(logits) is the
    label (float32 1/0, no gradient)."""

    @tf.custom_gradient
    def cross_entropy(logits):
        losses, log_normalizer, correct = _cross_entropy_forward(logits, labels)

        def gradient(upstream, unused_upstream_of_correct):
            return _cross_entropy_gradient(upstream, logits, log_normalizer, labels)

        return (losses, correct), gradient

    return cross_entropy(logits)
