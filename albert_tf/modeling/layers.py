"""Building blocks shared by the encoder and every head.

Each layer creates its variables in `__init__` (all shapes follow from the config) and marks
itself built (`self.built = True`, which also spares Keras a symbolic trace on the first call),
so a model's `checkpoint_variables()` is complete before the first call and a checkpoint can be
loaded into a model that has never run. Each layer names its own variables in the original layout
(`kernel`, `bias`, `beta`, `gamma`, ...) through `checkpoint_variables()`; parents prefix them
with their scope. Nothing outside `albert_tf/modeling/` knows the names.

Precision: variables are float32. Matrix products run in the layer's compute dtype (bfloat16 or
float16 under a Keras mixed policy); LayerNorm, softmax and logits run in float32, as
`float32_policy(layer)` arranges. Under the plain `bfloat16` policy (the bfloat16 export, never
training) the products' weights are also stored in bfloat16, so a call reads half the bytes
and casts none; LayerNorm, the embedding tables and the float32 heads keep float32 variables.
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import fused
from albert_tf.modeling.bias import add_bias

LAYER_NORM_EPSILON = 1e-12  # tf.contrib.layers.layer_norm's hard-coded value (Keras default: 1e-3)
MASK_ADDER = -10000.0


def truncated_normal(stddev):
    """The original's `create_initializer`: truncated at two standard deviations."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def tanh_gelu(x):
    return tf.nn.gelu(x, approximate=True)


# The same function, faster under a gradient tape (`fused`): what `Dense` takes in training.
_TRAINING_VARIANTS = {tanh_gelu: fused.gelu}


def get_activation(name):
    """The original's `get_activation`; "gelu" is the tanh approximation (HF: "gelu_new")."""
    if name == "gelu":
        return tanh_gelu
    if name == "relu":
        return tf.nn.relu
    if name == "tanh":
        return tf.math.tanh
    if name == "linear":
        return None
    raise ValueError(f"unsupported activation {name!r}; expected gelu, relu, tanh or linear")


def float32_policy(layer_or_policy):
    """The policy that keeps a mixed-precision or bfloat16 model's LayerNorm/softmax/logits in
    float32."""
    policy = keras.dtype_policies.get(layer_or_policy)
    if policy.compute_dtype in ("bfloat16", "float16"):
        return keras.DTypePolicy("float32")
    return keras.DTypePolicy(policy.variable_dtype)


def prefixed(prefix, named_variables):
    """`{prefix + name: variable}` in the same order."""
    return collections.OrderedDict((prefix + name, variable) for name, variable in named_variables.items())


class LayerNorm(keras.layers.LayerNormalization):
    """LayerNorm over the last axis with epsilon 1e-12, computed in float32; variables beta/gamma."""

    def __init__(self, width, dtype=None, **kwargs):
        super().__init__(axis=-1, epsilon=LAYER_NORM_EPSILON, dtype=float32_policy(dtype), **kwargs)
        self.build((None, width))

    def call(self, inputs, training=False):
        if training and inputs.shape.is_fully_defined():  # XLA compiles once per shape
            return fused.layer_norm(inputs, tf.convert_to_tensor(self.gamma),
                                    tf.convert_to_tensor(self.beta), self.epsilon)
        return super().call(inputs)

    def checkpoint_variables(self):
        return collections.OrderedDict([("beta", self.beta), ("gamma", self.gamma)])


class Dense(keras.layers.Layer):
    """A dense layer with the original's 2-D kernel [in, out] and bias [out].

    Inputs of any rank are reshaped to 2-D for one MatMul: the results of the original's
    `dense_layer_2d` Einsum ("BFH,HO->BFO"), no Einsum op in the graph (TFLite converts it), and
    faster on CPU (oneDNN fuses MatMul + BiasAdd).
    """

    def __init__(self, input_width, output_width, initializer_range, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.input_width = input_width
        self.output_width = output_width
        self.activation = activation
        self.kernel = self.add_weight(
            name="kernel", shape=(input_width, output_width),
            initializer=truncated_normal(initializer_range))
        self.bias = (self.add_weight(name="bias", shape=(output_width,), initializer="zeros")
                     if use_bias else None)
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        if inputs.shape.rank == 2:
            return self._activate(self._add_bias(tf.matmul(inputs, self.kernel)), training)
        # MatMul + BiasAdd (+ activation) on the 2-D view: a pattern oneDNN fuses into one kernel.
        flat = self._activate(self._add_bias(tf.matmul(tf.reshape(inputs, [-1, self.input_width]),
                                                       self.kernel)), training)
        return tf.reshape(flat, tf.concat([tf.shape(inputs)[:-1], [self.output_width]], axis=0))

    def _add_bias(self, outputs):
        return outputs if self.bias is None else add_bias(outputs, self.bias)

    def _activate(self, outputs, training):
        if self.activation is None:
            return outputs
        if training and outputs.shape.is_fully_defined():  # XLA compiles once per shape
            return _TRAINING_VARIANTS.get(self.activation, self.activation)(outputs)
        return self.activation(outputs)

    def checkpoint_variables(self):
        names = [("kernel", self.kernel)]
        if self.bias is not None:
            names.append(("bias", self.bias))
        return collections.OrderedDict(names)


class ClassificationHead(keras.layers.Layer):
    """logits = x · output_weightsᵀ + output_bias [num_labels], float32 under any policy.

    The original's SOP, GLUE and RACE heads all have this form (`output_weights` [num_labels, H]).
    """

    def __init__(self, hidden_size, num_labels, stddev, dtype=None, **kwargs):
        super().__init__(dtype=float32_policy(dtype), **kwargs)
        self.output_weights = self.add_weight(
            name="output_weights", shape=(num_labels, hidden_size),
            initializer=truncated_normal(stddev))
        self.output_bias = self.add_weight(name="output_bias", shape=(num_labels,), initializer="zeros")
        self.built = True  # every variable exists already

    def call(self, pooled_output):
        return tf.matmul(pooled_output, self.output_weights, transpose_b=True) + self.output_bias

    def checkpoint_variables(self):
        return collections.OrderedDict([("output_weights", self.output_weights),
                                        ("output_bias", self.output_bias)])
