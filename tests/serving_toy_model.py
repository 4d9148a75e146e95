"""A tiny SavedModel with TF Serving's three signature kinds (y = 0.5 x + offset, as TF
Serving's half_plus_two test model), written as a numbered version the way exports are."""

import os

import tensorflow as tf

from albert_tf.export import signature_methods


class HalfPlus(tf.Module):
    def __init__(self, offset=3.0):
        super().__init__()
        self.offset = tf.Variable(offset)

    def _y(self, x):
        return 0.5 * x + self.offset

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def predict(self, x):
        return {"y": self._y(x)}

    def _x_of(self, inputs):
        return tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"][:, 0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def regress(self, inputs):
        return {"outputs": self._y(self._x_of(inputs))}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def classify(self, inputs):
        y = self._y(self._x_of(inputs))
        return {"scores": tf.stack([y, -y], axis=1),
                "classes": tf.tile(tf.constant([["pos", "neg"]]), [tf.shape(y)[0], 1])}

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")])
    def ids(self, ids):
        return {"total": tf.reduce_sum(ids, axis=1), "first": ids[:, 0]}


def write_version(base, version, offset=3.0):
    """`<base>/<version>/`, written under a temporary name then renamed; returns its path."""
    model = HalfPlus(offset)
    temp, path = os.path.join(base, f".tmp-{version}"), os.path.join(base, str(version))
    tf.saved_model.save(model, temp, signatures={
        "serving_default": model.predict, "regress_x": model.regress,
        "classify_x": model.classify, "ids": model.ids})
    signature_methods.set_method_names(temp, {"regress_x": signature_methods.REGRESS,
                                              "classify_x": signature_methods.CLASSIFY})
    os.rename(temp, path)
    return path
