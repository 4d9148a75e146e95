"""run_classifier's --export_precision: bfloat16 keeps the float32 signatures with its matrix
products in bfloat16; int8 adds model.tflite; each answers close to the float32 export."""

import os
import types

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf import checkpoints
from albert_tf.export import classifier as classifier_export
from albert_tf.export import tflite
from albert_tf.modeling import classifier, encoder
from albert_tf.training import length_buckets
from tests.conftest import brown_config


def _matmul_types(model_dir):
    """The element types of the MatMul / BatchMatMul ops in the SavedModel's functions."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(model_dir, "saved_model.pb"), "rb") as reader:
        saved_model.ParseFromString(reader.read())
    return {tf.dtypes.as_dtype(node.attr["T"].type).name
            for function in saved_model.meta_graphs[0].graph_def.library.function
            for node in function.node_def if node.op in ("MatMul", "BatchMatMulV2")}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    config = brown_config()
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 2)
    dummy = tf.zeros([1, 2], tf.int32)
    model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy})
    model.head.output_weights.assign(model.head.output_weights * 50.0)  # spread the answers
    root = tmp_path_factory.mktemp("precisions")
    prefix = str(root / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                          in model.checkpoint_variables().items()})
    job = types.SimpleNamespace(
        albert_config=config, num_labels=2, label_list=["0", "1"], max_seq_length=64,
        regression=False, spm_model_file=None, do_lower_case=True,
        batching=length_buckets.Batching.cut((32, 64)))
    return {precision: classifier_export.export_from_checkpoint(
        job, prefix, str(root / precision), export_precision=precision)
        for precision in classifier_export.EXPORT_PRECISIONS}


def _probabilities(model_dir, ids, mask):
    ids_signature = tf.saved_model.load(model_dir).signatures["ids"]
    return ids_signature(input_ids=ids, input_mask=mask,
                         segment_ids=tf.zeros_like(ids))["probabilities"].numpy()


def test_bfloat16_export_has_float32_signatures_and_bfloat16_products(exports):
    float_ids = tf.saved_model.load(exports["float32"]).signatures["ids"]
    bf16_ids = tf.saved_model.load(exports["bfloat16"]).signatures["ids"]
    assert bf16_ids.structured_input_signature == float_ids.structured_input_signature
    assert ({key: spec.dtype for key, spec in bf16_ids.structured_outputs.items()}
            == {key: spec.dtype for key, spec in float_ids.structured_outputs.items()})
    assert "bfloat16" in _matmul_types(exports["bfloat16"])
    assert "bfloat16" not in _matmul_types(exports["float32"])
    ids = tf.constant(np.random.RandomState(0).randint(5, 4000, (8, 30)), tf.int32)
    mask = tf.ones_like(ids)
    reference = _probabilities(exports["float32"], ids, mask)
    assert np.ptp(reference[:, 0]) > 0.1
    np.testing.assert_allclose(_probabilities(exports["bfloat16"], ids, mask), reference,
                               atol=0.05)


def test_only_the_int8_export_holds_model_tflite(exports):
    assert [precision for precision, path in exports.items()
            if os.path.exists(os.path.join(path, tflite.TFLITE_FILE))] == ["int8"]


def test_an_unknown_precision_is_refused_by_name(exports):
    with pytest.raises(ValueError, match="--export_precision must be one of"):
        classifier_export.export_from_checkpoint(None, None, None, export_precision="int4")


def test_race_int8_export_answers_as_its_float32_savedmodel(tmp_path):
    """RACE's ids signature (`serving_default`, [batch, 4, length]) in model.tflite."""
    from albert_tf.export import race as race_export
    from albert_tf.modeling import multiple_choice
    from albert_tf.serving import tflite_servable
    config = brown_config()
    model = multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(config), num_choices=4)
    dummy = tf.zeros([1, 4, 2], tf.int32)
    model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy}, training=False)
    for variable in model.checkpoint_variables().values():
        if "output_weights" in variable.path:
            variable.assign(variable * 50.0)  # spread the answers
    prefix = str(tmp_path / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                          in model.checkpoint_variables().items()})
    job = types.SimpleNamespace(albert_config=config, max_seq_length=64,
                                batching=length_buckets.Batching.cut((32, 64)),
                                settings=types.SimpleNamespace(spm_model_file=None))
    model_dir = race_export.export_from_checkpoint(job, prefix, str(tmp_path / "race"),
                                                   export_precision="int8")
    ids = np.random.RandomState(2).randint(5, 4000, (3, 4, 24)).astype(np.int32)
    columns = {"input_ids": ids, "input_mask": np.ones_like(ids),
               "segment_ids": np.zeros_like(ids)}
    reference = tf.saved_model.load(model_dir).signatures["serving_default"](
        **{key: tf.constant(value) for key, value in columns.items()})["probabilities"].numpy()
    runner = tflite_servable.TfliteRunner(model_dir, "race", 1, 64)
    answer = runner.run("serving_default", columns)["probabilities"]
    assert np.ptp(reference) > 0.05  # five times the tolerance
    np.testing.assert_allclose(answer, reference, atol=0.01)
    with pytest.raises(ValueError, match="for RACE"):
        race_export.export_from_checkpoint(job, prefix, str(tmp_path / "x"),
                                           export_precision="bfloat16")
