"""`AlbertTokenClassifier`: a tag for every token (part of speech, BIO names).

Dropout (0.1, as the GLUE head) on the sequence output, then per position
logits = h · output_weightsᵀ + output_bias, `output_weights` [num_labels, H] and `output_bias`
[num_labels] at the root scope, the GLUE head's layout and initialisation.
"""

import keras
import tensorflow as tf

from albert_tf.modeling import classifier, layers, saving
from albert_tf.modeling import encoder as encoder_lib


@saving.register
class AlbertTokenClassifier(saving.ConfigSerializable, keras.Model):
    """`model(inputs, training)` → {"logits": [B, S, num_labels] float32}."""

    def __init__(self, config, num_labels, dropout_rate=0.1, use_one_hot_embeddings=False,
                 use_einsum=False, **kwargs):
        super().__init__(**kwargs)
        self._record_arguments(config, num_labels=num_labels, dropout_rate=dropout_rate,
                               use_one_hot_embeddings=use_one_hot_embeddings,
                               use_einsum=use_einsum)
        self.config = config
        self.num_labels = num_labels
        self.encoder = encoder_lib.AlbertEncoder(
            config, use_one_hot_embeddings, use_einsum, dtype=self.dtype_policy, name="bert")
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=layers.float32_policy(self.dtype_policy))
        self.head = layers.ClassificationHead(config.hidden_size, num_labels,
                                              classifier.HEAD_INITIALIZER_STDDEV,
                                              dtype=self.dtype_policy, name="output")
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        sequence_output = tf.cast(self.encoder(inputs, training=training)["sequence_output"],
                                  tf.float32)
        return {"logits": self.head(self.dropout(sequence_output, training=training))}

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        names.update(self.head.checkpoint_variables())
        return names
