"""TF Serving's Classify and Regress APIs serve only signatures whose SignatureDef `method_name`
says so; Keras and `tf.saved_model.save` write every signature as a predict signature, so the
method names are set in saved_model.pb after writing."""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

PREDICT = "tensorflow/serving/predict"
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"
# TF Serving's tensor keys of classify and regress signatures.
CLASSIFY_INPUTS, CLASSIFY_CLASSES, CLASSIFY_SCORES = "inputs", "classes", "scores"
REGRESS_INPUTS, REGRESS_OUTPUTS = "inputs", "outputs"


def set_method_names(model_dir, method_names):
    """Sets `method_names` ({signature name: method}) in `<model_dir>/saved_model.pb`."""
    path = os.path.join(model_dir, "saved_model.pb")
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(path, "rb") as reader:
        saved_model.ParseFromString(reader.read())
    signature_defs = saved_model.meta_graphs[0].signature_def
    for name, method in method_names.items():
        if name not in signature_defs:
            raise KeyError(f"{model_dir}: no signature {name!r} to mark as {method}")
        signature_defs[name].method_name = method
    with tf.io.gfile.GFile(path, "wb") as writer:
        writer.write(saved_model.SerializeToString())
