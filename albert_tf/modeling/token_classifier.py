"""`AlbertTokenClassifier`: a tag for every token (part of speech, BIO names).

Dropout (0.1, as the GLUE head) on the sequence output, then per position
logits = h · output_weightsᵀ + output_bias, `output_weights` [num_labels, H] and `output_bias`
[num_labels] at the root scope, the GLUE head's layout and initialisation.
"""

import tensorflow as tf

from albert_tf.modeling import classifier, saving


@saving.register
class AlbertTokenClassifier(classifier.AlbertClassifier):
    """`AlbertTokenClassifier(encoder, num_labels)`; `model(inputs, training)` →
    {"logits": [B, S, num_labels] float32}: the GLUE classifier's dropout and head (same
    arguments and variables), applied at every position."""

    def call(self, inputs, training=False):
        sequence_output = tf.cast(self.encoder(inputs, training=training)["sequence_output"],
                                  tf.float32)
        return {"logits": self.head(self.dropout(sequence_output, training=training))}
