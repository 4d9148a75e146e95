"""export_to_tfhub.py --export_precision=bfloat16: the float32 module's signatures, inputs and
outputs, with its matrix products' weights stored in bfloat16, answering close to the float32
module; an inference artefact (no trainable variables, training=True refused)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export import hub
from tests.conftest import brown_config, run_python
from tests.test_export_hub import sample_batch, write_albert_directory

# Tolerance, as a norm-wise relative error ||bfloat16 - float32|| / ||float32|| of each output.
# bfloat16 keeps 8 significant bits: rounding a value errs by at most u = 2**-8 of it. Each
# matrix product rounds both operands (<= 2u relative per product, float32 accumulation adds
# nothing at this size) and the tiny model chains about 14 of them from the embeddings to the
# MLM logits (the embedding projection, 6 per layer in 2 layers, the pooler or the MLM
# transform); LayerNorm re-normalises and does not amplify relative errors. First-order worst
# case 14 x 2u = 28u; independent roundings add in quadrature (about 2u x sqrt(14) = 7.5u).
# Asserted: at most 16u = 1/16 for every output, and more than u/64, so the test also fails if
# the "bfloat16" module computes in float32.
UNIT_ROUNDOFF = 2.0 ** -8
TOLERANCE = 16 * UNIT_ROUNDOFF
FLOOR = UNIT_ROUNDOFF / 64


@pytest.fixture(scope="module")
def albert_directory(tmp_path_factory, spm_model_file):
    return write_albert_directory(tmp_path_factory.mktemp("albert_tiny"), spm_model_file,
                                  brown_config(hidden_dropout_prob=0.1))


@pytest.fixture(scope="module")
def modules(albert_directory, tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    return {precision: hub.export_hub_module(albert_directory, str(root / precision),
                                             export_precision=precision)
            for precision in hub.EXPORT_PRECISIONS}


def _relative_error(answer, reference):
    return float(np.linalg.norm(answer - reference) / np.linalg.norm(reference))


def _outputs(module):
    """{"<signature or object>/<output>": array} of every signature and reusable object."""
    batch = sample_batch()
    three = {name: batch[name] for name in ("input_ids", "input_mask", "segment_ids")}
    tf2 = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
           "input_type_ids": batch["segment_ids"]}
    calls = {
        "tokens": lambda: module.signatures["tokens"](**three),
        "sop": lambda: module.signatures["sop"](**three),
        "mlm": lambda: module.signatures["mlm"](**three, mlm_positions=batch["mlm_positions"]),
        "serving_default": lambda: module.signatures["serving_default"](**tf2),
        "__call__": lambda: module(tf2, training=False),
        "mlm.__call__": lambda: module.mlm(dict(tf2, masked_lm_positions=batch["mlm_positions"]),
                                           training=False),
    }
    outputs = {}
    for call_name, call in calls.items():
        for name, value in call().items():
            values = value if isinstance(value, list) else [value]
            for index, tensor in enumerate(values):
                suffix = f"/{index}" if isinstance(value, list) else ""
                outputs[f"{call_name}/{name}{suffix}"] = tensor
    return outputs


def _stored_dtypes(module_path):
    """[(variable name, dtype name)] as the SavedModel's checkpoint stores them (names repeat:
    three LayerNorms are `LayerNorm/gamma:0`)."""
    reader = tf.train.load_checkpoint(os.path.join(module_path, "variables", "variables"))
    names = [variable.name for variable in tf.saved_model.load(module_path).variables]
    stored = reader.get_variable_to_dtype_map()
    return [(name, stored[f"variables/{index}/.ATTRIBUTES/VARIABLE_VALUE"].name)
            for index, name in enumerate(names)]


# Kept float32 by the model's layers under the bfloat16 policy (as in the classifier's
# bfloat16 export): embedding tables, LayerNorm, and the MLM / SOP heads' output weights.
FLOAT32_KEPT = ("embeddings/", "LayerNorm", "predictions/", "seq_relationship/")


@pytest.mark.slow
def test_bfloat16_module_stores_the_products_weights_in_bfloat16(modules):
    float32 = _stored_dtypes(modules["float32"])
    bfloat16 = _stored_dtypes(modules["bfloat16"])
    assert len(float32) == 32 and {dtype for _, dtype in float32} == {"float32"}
    assert [name for name, _ in bfloat16] == [name for name, _ in float32]
    products = [(name, dtype) for name, dtype in bfloat16 if not name.startswith(FLOAT32_KEPT)]
    # 9 products x (kernel, bias): the embedding projection, query, key, value, attention
    # output, intermediate, intermediate output (one shared layer group), pooler, MLM transform.
    assert len(products) == 18 and all(name.endswith(("kernel:0", "bias:0")) for name, _ in products)
    assert {dtype for _, dtype in products} == {"bfloat16"}, bfloat16
    assert {dtype for name, dtype in bfloat16 if name.startswith(FLOAT32_KEPT)} == {"float32"}


@pytest.mark.slow
def test_bfloat16_module_answers_every_signature_as_the_float32_module(modules):
    loaded = {precision: tf.saved_model.load(path) for precision, path in modules.items()}
    for name, signature in loaded["float32"].signatures.items():
        other = loaded["bfloat16"].signatures[name]
        assert other.structured_input_signature == signature.structured_input_signature, name
        assert other.structured_outputs == signature.structured_outputs, name
    reference = _outputs(loaded["float32"])
    answer = _outputs(loaded["bfloat16"])
    assert set(answer) == set(reference) and len(reference) == 21
    errors = {}
    for name, expected in reference.items():
        assert answer[name].dtype == expected.dtype == tf.float32, name
        assert answer[name].shape == expected.shape, name
        errors[name] = _relative_error(answer[name].numpy(), expected.numpy())
    assert all(FLOOR < error <= TOLERANCE for error in errors.values()), errors
    info = {precision: module.signatures["tokenization_info"]()
            for precision, module in loaded.items()}
    assert bool(info["bfloat16"]["do_lower_case"]) is bool(info["float32"]["do_lower_case"]) is True
    assert info["bfloat16"]["vocab_file"].numpy().decode().startswith(modules["bfloat16"])
    assert os.path.basename(info["bfloat16"]["vocab_file"].numpy().decode()) == "30k-clean.model"


@pytest.mark.slow
def test_bfloat16_module_has_no_trainable_variables_and_refuses_training(modules):
    module = tf.saved_model.load(modules["bfloat16"])
    assert list(module.trainable_variables) == [] and list(module.mlm.trainable_variables) == []
    assert len(module.variables) == len(tf.saved_model.load(modules["float32"]).variables) == 32
    batch = sample_batch()
    inputs = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
              "input_type_ids": batch["segment_ids"]}
    for call in (lambda: module(inputs, training=True), lambda: module.mlm(
            dict(inputs, masked_lm_positions=batch["mlm_positions"]), training=True)):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="export_precision=bfloat16 for inference.*float32 export"):
            call()


def test_unknown_export_precision_is_refused_before_anything_is_read(tmp_path):
    with pytest.raises(ValueError, match=r"--export_precision must be one of \('float32', "
                       r"'bfloat16'\) for the hub module, got 'int8'"):
        hub.export_hub_module(str(tmp_path / "absent"), str(tmp_path / "hub"),
                              export_precision="int8")
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_export_to_tfhub_refuses_an_unknown_precision_and_writes_nothing(albert_directory, tmp_path):
    result = run_python(("export_to_tfhub.py", f"--albert_directory={albert_directory}",
                         "--export_precision=float16", f"--export_path={tmp_path / 'hub'}"),
                        check=False, timeout=300)
    assert result.returncode != 0
    assert "--export_precision" in result.stderr and "float32" in result.stderr, result.stderr
    assert "bfloat16" in result.stderr, result.stderr
    assert os.listdir(tmp_path) == []


HUB_KERAS_LAYER = r"""
import sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
batch = dict(np.load(sys.argv[2]))
inputs = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
          "input_type_ids": batch["segment_ids"]}
frozen = hub.KerasLayer(sys.argv[1])
out = {"pooled_output": frozen(inputs)["pooled_output"].numpy(),
       "frozen_weights": np.array(len(frozen.weights))}
trainable = hub.KerasLayer(sys.argv[1], trainable=True)
out["trainable_weights"] = np.array(len(trainable.trainable_weights))
try:
    trainable(inputs, training=True)
    out["refusal"] = np.array("")
except tf.errors.InvalidArgumentError as error:
    out["refusal"] = np.array(error.message)
np.savez(sys.argv[3], **out)
"""


@pytest.mark.slow
def test_bfloat16_module_is_a_frozen_hub_keras_layer(modules, tmp_path):
    """tensorflow_hub (with tf-keras, as pinned for it): `hub.KerasLayer(path)` answers as the
    module; `trainable=True` has nothing to train and fails at a training call, by name."""
    batch = sample_batch()
    np.savez(tmp_path / "batch.npz", **batch)
    result = run_python(("-c", HUB_KERAS_LAYER, modules["bfloat16"], str(tmp_path / "batch.npz"),
                         str(tmp_path / "out.npz")), check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = dict(np.load(tmp_path / "out.npz"))
    expected = tf.saved_model.load(modules["bfloat16"]).signatures["serving_default"](
        input_word_ids=batch["input_ids"], input_mask=batch["input_mask"],
        input_type_ids=batch["segment_ids"])["pooled_output"].numpy()
    np.testing.assert_array_equal(loaded["pooled_output"], expected)
    assert int(loaded["frozen_weights"]) == 32 and int(loaded["trainable_weights"]) == 0
    assert "export_precision=bfloat16 for inference" in str(loaded["refusal"])
