"""`inner_group_k`: the original's post-LayerNorm `attention_ffn_block`.

x1 = LayerNorm(attention(x) + x); out = LayerNorm_1(ffn(x1) + x1), where ffn is
`ffn_1/intermediate/dense` (H→I, hidden_act) then `ffn_1/intermediate/output/dense` (I→H) —
`output` nested inside `intermediate`, as in the original checkpoints. Residual sums and
LayerNorms are float32. With a `packing.Packing`, inputs and outputs are the batch's real tokens
[N, H]: every step but attention works token by token.
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import attention, layers


class TransformerBlock(keras.layers.Layer):

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        hidden, intermediate = config.hidden_size, config.intermediate_size
        self.attention = attention.SelfAttention(config, dtype=self.dtype_policy,
                                                 name="attention_1")
        self.attention_layer_norm = layers.LayerNorm(hidden, dtype=self.dtype_policy, name="LayerNorm")
        self.intermediate = layers.Dense(
            hidden, intermediate, config.initializer_range, layers.get_activation(config.hidden_act),
            dtype=self.dtype_policy, name="intermediate")
        self.intermediate_output = layers.Dense(
            intermediate, hidden, config.initializer_range, None, dtype=self.dtype_policy,
            name="intermediate_output")
        self.output_dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype=self.dtype_policy)
        self.ffn_layer_norm = layers.LayerNorm(hidden, dtype=self.dtype_policy, name="LayerNorm_1")
        self.built = True  # every variable exists already

    @property
    def input_dtype(self):
        """float32: Keras would round the residual stream to the compute dtype on entry (and sum
        its gradient there); the attention and the feed-forward layer cast their own inputs."""
        return "float32"

    def call(self, inputs, input_mask, training=False, packing=None):
        attended = self.attention(inputs, input_mask, training=training, packing=packing)
        attended = self.attention_layer_norm(tf.cast(attended, tf.float32) + inputs)
        ffn = self.intermediate_output(self.intermediate(attended, training=training))
        ffn = self.output_dropout(ffn, training=training)
        return self.ffn_layer_norm(tf.cast(ffn, tf.float32) + attended)

    def checkpoint_variables(self):
        return collections.OrderedDict([
            *layers.prefixed("attention_1/", self.attention.checkpoint_variables()).items(),
            *layers.prefixed("LayerNorm/", self.attention_layer_norm.checkpoint_variables()).items(),
            *layers.prefixed("ffn_1/intermediate/dense/", self.intermediate.checkpoint_variables()).items(),
            *layers.prefixed("ffn_1/intermediate/output/dense/",
                             self.intermediate_output.checkpoint_variables()).items(),
            *layers.prefixed("LayerNorm_1/", self.ffn_layer_norm.checkpoint_variables()).items(),
        ])
