"""`AlbertMultipleChoice`: the RACE model of the original `race_utils.create_model`.

The [B, C, S] inputs are flattened to [B·C, S]; the pooled output of each sequence gets dropout
(`dropout_prob`, the original's `--dropout_prob`) when training, then one score
pooled · output_weightsᵀ + output_bias with `output_weights` [1, H] and `output_bias` [1] at the
root scope (initializer stddev 0.02, as in the original); the B·C scores are reshaped to [B, C]
and trained with softmax cross-entropy over the choices.
"""

import keras
import tensorflow as tf

from albert_tf.modeling import layers, saving, task_model

HEAD_INITIALIZER_STDDEV = 0.02  # hard-coded in race_utils, not config.initializer_range
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


@saving.register
class AlbertMultipleChoice(task_model.AlbertTaskModel):
    """`AlbertMultipleChoice(encoder, num_choices)`; `model(inputs, training)` with int32
    [B, C, S] inputs → {"logits": [B, C] float32, "probabilities": [B, C] float32}."""

    def __init__(self, encoder, num_choices=4, dropout_prob=0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self._record_arguments(num_choices=num_choices, dropout_prob=dropout_prob)
        self.num_choices = num_choices
        self.dropout = keras.layers.Dropout(dropout_prob, dtype=self.dtype_policy)
        self.head = layers.ClassificationHead(self.config.hidden_size, 1, HEAD_INITIALIZER_STDDEV,
                                              dtype=self.dtype_policy, name="output")
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        seq_length = tf.shape(inputs["input_ids"])[-1]
        flat = {name: tf.reshape(inputs[name], [-1, seq_length])
                for name in INPUT_NAMES if name in inputs}
        pooled_output = self.encoder(flat, training=training)["pooled_output"]
        scores = self.head(self.dropout(pooled_output, training=training))
        logits = tf.reshape(scores, [-1, self.num_choices])
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        names.update(self.head.checkpoint_variables())
        return names


def per_example_loss(label_ids, logits):
    """Softmax cross-entropy over the choices, [B] float32 (the original's one-hot form)."""
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(label_ids, tf.int32), logits=tf.cast(logits, tf.float32))
