"""`AlbertTaskModel`: the base of every task model, an `AlbertEncoder` passed in plus a head.

    bert = encoder.AlbertEncoder(config, skip_padding=True)
    model = classifier.AlbertClassifier(bert, num_labels=3)
    model.encoder is bert    # the same variables, not a copy

The encoder is built once by the caller (its switches, one-hot embeddings and skipping padding,
are the encoder's own) and the head adds its layers around it; the checkpoint names stay
the original's because the encoder names its variables `bert/...` itself. The head computes in
the encoder's precision policy unless given another `dtype`.
"""

import keras

from albert_tf.modeling import saving


class AlbertTaskModel(saving.EncoderSerializable, keras.Model):
    """`self.encoder` (the passed-in `AlbertEncoder`) and `self.config` (its `AlbertConfig`)."""

    def __init__(self, encoder, dtype=None, **kwargs):
        super().__init__(dtype=encoder.dtype_policy if dtype is None else dtype, **kwargs)
        self.encoder = encoder
        self.config = encoder.config
