"""`AlbertClassifier`: the GLUE model of `classifier_utils.create_model`.

Dropout (default 0.1, the original's hard-coded keep_prob 0.9) on the pooled output, then
logits = pooled · output_weightsᵀ + output_bias with `output_weights` [num_labels, H] and
`output_bias` [num_labels] at the root scope, initialised with stddev 0.02 as in the original.
num_labels = 1 gives the STS-B regression head.
"""

import keras

from albert_tf.modeling import layers, saving, task_model

HEAD_INITIALIZER_STDDEV = 0.02  # hard-coded in classifier_utils, not config.initializer_range


@saving.register
class AlbertClassifier(task_model.AlbertTaskModel):
    """`AlbertClassifier(encoder, num_labels)`; `model(inputs, training)` →
    {"logits": [B, num_labels] float32, "pooled_output": [B, H]}."""

    def __init__(self, encoder, num_labels, dropout_rate=0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self._record_arguments(num_labels=num_labels, dropout_rate=dropout_rate)
        self.num_labels = num_labels
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=layers.float32_policy(self.dtype_policy))
        self.head = layers.ClassificationHead(self.config.hidden_size, num_labels, HEAD_INITIALIZER_STDDEV,
                                              dtype=self.dtype_policy, name="output")
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        pooled_output = self.encoder(inputs, training=training)["pooled_output"]
        logits = self.head(self.dropout(pooled_output, training=training))
        return {"logits": logits, "pooled_output": pooled_output}

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        names.update(self.head.checkpoint_variables())
        return names
