"""`attention_1`: multi-head self-attention with the original's 2-D stored kernels.

q/k/v kernels are stored [H, N·D] and the output kernel [N·D, H] (checkpoint shapes [H, H]).
Token rows go through each kernel as one MatMul (`_rows`) and are reshaped to heads; logits and
context are batched MatMuls over [B,N,S,D]. That is the original's Einsum arithmetic
("BFH,HND->BFND", "BFND,BTND->BNFT", "BNFT,BTND->BFND", "BFND,NDH->BFH") with no Einsum op:
the graph converts to TFLite, and it is the faster one on CPUs (bench/RESULTS.md). Keys are
masked by adding (1 − mask)·−10000 to the float32 logits; the softmax runs in float32. Given a
`packing.Packing`, inputs and outputs are the batch's real tokens [N, H] (see `packing`),
projected by the same `_rows`.
"""

import collections
import math

import keras
import tensorflow as tf

from albert_tf.modeling import layers
from albert_tf.modeling.bias import add_bias


def attention_adder(input_mask):
    """[B,S] mask (1 = real token) → [B,1,1,S] float32 adder: 0 on real keys, −10000 on padding."""
    # expand_dims, not [:, newaxis, newaxis, :]: TFLite has no kernel for that strided slice
    # on a dynamic shape (the int8 export, `export.tflite`).
    mask = tf.expand_dims(tf.expand_dims(tf.cast(input_mask, tf.float32), 1), 1)
    return (1.0 - mask) * layers.MASK_ADDER


class SelfAttention(keras.layers.Layer):
    """Scope `attention_1`: `self/{query,key,value}` and `output/dense`, plus their dropouts."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_size = hidden // self.num_heads
        self.hidden_size = hidden
        initializer = layers.truncated_normal(config.initializer_range)

        def weight(name, shape, init):
            return self.add_weight(name=name, shape=shape, initializer=init)

        self.query_kernel = weight("query_kernel", (hidden, hidden), initializer)
        self.query_bias = weight("query_bias", (hidden,), "zeros")
        self.key_kernel = weight("key_kernel", (hidden, hidden), initializer)
        self.key_bias = weight("key_bias", (hidden,), "zeros")
        self.value_kernel = weight("value_kernel", (hidden, hidden), initializer)
        self.value_bias = weight("value_bias", (hidden,), "zeros")
        self.output_kernel = weight("output_kernel", (hidden, hidden), initializer)
        self.output_bias = weight("output_bias", (hidden,), "zeros")
        self.probs_dropout = keras.layers.Dropout(config.attention_probs_dropout_prob, dtype=self.dtype_policy)
        self.output_dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype=self.dtype_policy)
        self.built = True  # every variable exists already

    def _rows(self, rows, kernel, bias):
        """Token rows ([B·S, H], or packed [N, H]) through a stored 2-D kernel: the one MatMul
        projection of the padded and the packed path."""
        return add_bias(tf.matmul(tf.reshape(rows, (-1, self.hidden_size)), kernel), bias)

    def _heads(self, inputs, kernel, bias, packing):
        """[B,S,H] (or packed [N,H]) → [B,S,N,D]."""
        heads = (self.num_heads, self.head_size)
        projected = self._rows(inputs, kernel, bias)
        if packing is None:
            batch_size, length = tf.shape(inputs)[0], tf.shape(inputs)[1]
        else:
            projected, batch_size, length = packing.unpack(projected), packing.batch_size, packing.length
        return tf.reshape(projected, (batch_size, length, *heads))

    def _attend(self, query, key, value, adder, training):
        """[B,S,N,D] ×3 → context [B,S,N,D]; logits and softmax in float32."""
        logits = tf.matmul(tf.transpose(query, (0, 2, 1, 3)), tf.transpose(key, (0, 2, 3, 1)))
        logits = tf.cast(logits, tf.float32) * (1.0 / math.sqrt(self.head_size)) + adder
        probs = tf.cast(tf.nn.softmax(logits), self.compute_dtype)
        probs = self.probs_dropout(probs, training=training)
        return tf.transpose(tf.matmul(probs, tf.transpose(value, (0, 2, 1, 3))), (0, 2, 1, 3))

    def _output(self, context, packing):
        """[B,S,N,D] → [B,S,H] (packed: [N,H]) through `output/dense`."""
        rows = tf.reshape(context, (-1, self.hidden_size))
        if packing is not None:
            return self._rows(packing.pack(rows), self.output_kernel, self.output_bias)
        batch_size, length = tf.shape(context)[0], tf.shape(context)[1]
        return tf.reshape(self._rows(rows, self.output_kernel, self.output_bias),
                          (batch_size, length, self.hidden_size))

    def call(self, inputs, input_mask, training=False, packing=None):
        adder = attention_adder(input_mask)
        query = self._heads(inputs, self.query_kernel, self.query_bias, packing)
        key = self._heads(inputs, self.key_kernel, self.key_bias, packing)
        value = self._heads(inputs, self.value_kernel, self.value_bias, packing)
        context = self._attend(query, key, value, adder, training)
        return self.output_dropout(self._output(context, packing), training=training)

    def checkpoint_variables(self):
        return collections.OrderedDict([
            ("self/query/kernel", self.query_kernel), ("self/query/bias", self.query_bias),
            ("self/key/kernel", self.key_kernel), ("self/key/bias", self.key_bias),
            ("self/value/kernel", self.value_kernel), ("self/value/bias", self.value_bias),
            ("output/dense/kernel", self.output_kernel), ("output/dense/bias", self.output_bias),
        ])
