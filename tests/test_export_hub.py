"""export_checkpoints.py and export_to_tfhub.py: what they write, read back in a fresh process."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf import checkpoints
from albert_tf.export import hub, pretrained, versioned
from albert_tf.modeling import encoder, pretraining
from tests.conftest import brown_config, run_python

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FRESH_LOADER = r"""
import sys
import numpy as np
import tensorflow as tf
module = tf.saved_model.load(sys.argv[1])
batch = dict(np.load(sys.argv[2]))
three = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
out = {}
for name, value in module.signatures["tokens"](**three).items():
    out["tokens/" + name] = value.numpy()
for name, value in module.signatures["sop"](**three).items():
    out["sop/" + name] = value.numpy()
for name, value in module.signatures["mlm"](**three, mlm_positions=batch["mlm_positions"]).items():
    out["mlm/" + name] = value.numpy()
tf2 = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
       "input_type_ids": batch["segment_ids"]}
for name, value in module.signatures["serving_default"](**tf2).items():
    out["serving_default/" + name] = value.numpy()
called = module(tf2, training=False)
out["call/pooled_output"] = called["pooled_output"].numpy()
out["call/layers"] = np.array(len(called["encoder_outputs"]))
info = module.signatures["tokenization_info"]()
out["info/vocab_file"] = np.array(info["vocab_file"].numpy().decode())
out["info/do_lower_case"] = info["do_lower_case"].numpy()
np.savez(sys.argv[3], **out)
"""


def write_albert_directory(directory, spm_model_file, config):
    """A release-layout directory of `config` with random weights: albert_config.json,
    model.ckpt-best with slots, 30k-clean.model."""
    config.to_json_file(str(directory / "albert_config.json"))
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    rng = np.random.default_rng(0)
    for variable in model.checkpoint_variables().values():
        variable.assign(rng.normal(0, 0.2, variable.shape).astype(np.float32))
    tensors = dict(model.checkpoint_variables())
    tensors.update({name + "/adam_m": np.zeros(v.shape, np.float32) for name, v in model.checkpoint_variables().items()})
    tensors["global_step"] = 125000
    checkpoints.write_checkpoint(str(directory / "model.ckpt-best"), tensors, update_state=False)
    with open(spm_model_file, "rb") as source, open(directory / "30k-clean.model", "wb") as target:
        target.write(source.read())
    return str(directory)


@pytest.fixture(scope="module")
def albert_directory(tmp_path_factory, spm_model_file):
    return write_albert_directory(tmp_path_factory.mktemp("albert_base"), spm_model_file, brown_config(
        num_hidden_layers=3, num_hidden_groups=1, max_position_embeddings=32, hidden_dropout_prob=0.1))


@pytest.fixture(scope="module")
def hub_export(albert_directory, tmp_path_factory):
    return hub.export_hub_module(albert_directory, str(tmp_path_factory.mktemp("export") / "hub"))


def sample_batch():
    ids = np.array([[2, 10, 11, 12, 3, 0, 0], [2, 20, 21, 3, 22, 23, 3]], np.int32)
    mask = (ids > 0).astype(np.int32)
    mask[0, 0] = 1
    segments = np.array([[0] * 7, [0, 0, 0, 0, 1, 1, 1]], np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "mlm_positions": np.array([[1, 2], [4, 5]], np.int32)}


def op_types(saved_model_dir):
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as reader:
        proto.ParseFromString(reader.read())
    graph = proto.meta_graphs[0].graph_def
    return ({node.op for node in graph.node}
            | {node.op for function in graph.library.function for node in function.node_def})


def test_export_checkpoints_drops_slots_keeps_step(albert_directory, tmp_path):
    result = run_python(("export_checkpoints.py", f"--albert_directory={albert_directory}",
                         f"--export_path={tmp_path / 'clean' / 'model.ckpt-best'}"),
                        check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    exported = checkpoints.list_variables(str(tmp_path / "clean"))
    source = checkpoints.list_variables(albert_directory)
    assert set(exported) == {name for name in source if not name.endswith("/adam_m")}
    assert len(exported) == 32 + 1
    assert checkpoints.read_tensors(str(tmp_path / "clean"), ["global_step"])["global_step"] == 125000
    for name, value in checkpoints.read_tensors(str(tmp_path / "clean")).items():
        np.testing.assert_array_equal(value, checkpoints.read_tensors(albert_directory, [name])[name])


def test_hub_module_in_a_fresh_process_matches_the_model(albert_directory, hub_export, tmp_path):
    export_path = hub_export
    batch = sample_batch()
    np.savez(tmp_path / "batch.npz", **batch)
    result = run_python(("-c", FRESH_LOADER, export_path, str(tmp_path / "batch.npz"),
                         str(tmp_path / "out.npz")), check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = dict(np.load(tmp_path / "out.npz"))

    _, model, _ = pretrained.load_pretraining_model(albert_directory)
    inputs = {"input_ids": batch["input_ids"], "input_mask": batch["input_mask"],
              "segment_ids": batch["segment_ids"], "masked_lm_positions": batch["mlm_positions"]}
    expected = {name: value.numpy() for name, value in model(inputs).items() if name != "encoder_outputs"}
    for signature in ("tokens", "sop", "mlm", "serving_default"):
        np.testing.assert_allclose(loaded[f"{signature}/sequence_output"], expected["sequence_output"], atol=1e-5)
        np.testing.assert_allclose(loaded[f"{signature}/pooled_output"], expected["pooled_output"], atol=1e-5)
    assert loaded["sop/sop_log_probs"].shape == (2, 2)
    np.testing.assert_allclose(loaded["sop/sop_log_probs"], tf.nn.log_softmax(expected["sop_logits"]), atol=1e-5)
    assert loaded["mlm/mlm_logits"].shape == (4, 4000)
    np.testing.assert_allclose(loaded["mlm/mlm_logits"], expected["mlm_logits"].reshape(4, 4000), atol=1e-4)
    np.testing.assert_allclose(loaded["call/pooled_output"], expected["pooled_output"], atol=1e-5)
    assert loaded["call/layers"] == 3
    vocab_file = str(loaded["info/vocab_file"])
    assert vocab_file.startswith(export_path) and vocab_file.endswith("30k-clean.model")
    assert bool(loaded["info/do_lower_case"]) is True
    pieces = spm.SentencePieceProcessor(model_file=os.path.join(export_path, "assets", "30k-clean.model"))
    assert pieces.get_piece_size() == 4000
    assert "Einsum" not in op_types(export_path)


def test_hub_module_fine_tunes_inside_keras(hub_export):
    """The reusable SavedModel API: a Keras model around `module(inputs, training)` trains a step."""
    module = tf.saved_model.load(hub_export)
    assert len(module.variables) == 32 and len(module.trainable_variables) == 25

    class Tagger(keras.Model):
        def __init__(self):
            super().__init__()
            self.module = module
            self.head = keras.layers.Dense(2)

        def call(self, inputs, training=False):
            return self.head(self.module(inputs, training=training)["pooled_output"])

    tagger = Tagger()
    batch = sample_batch()
    inputs = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
              "input_type_ids": batch["segment_ids"]}
    labels = np.array([0, 1])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    tagger(inputs)
    variables = list(module.trainable_variables) + list(tagger.head.trainable_variables)
    before = [v.numpy().copy() for v in variables]
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, tagger(inputs, training=True))
    gradients = tape.gradient(loss, variables)
    assert all(g is not None for g in gradients)
    for variable, gradient in zip(variables, gradients):
        variable.assign_sub(0.1 * tf.convert_to_tensor(gradient))
    unchanged = [v.name for b, v in zip(before, variables) if np.array_equal(b, v.numpy())]
    assert unchanged == ["attention_1/key_bias:0"]  # softmax is invariant to it: zero gradient
    # Dropout (0.1 in this config) only in training mode.
    np.testing.assert_array_equal(module(inputs)["pooled_output"], module(inputs)["pooled_output"])
    assert not np.allclose(module(inputs, training=True)["sequence_output"], module(inputs)["sequence_output"])


def test_export_to_tfhub_script_without_einsum(albert_directory, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = tmp_path / f".tmp-{versioned._HOST}-{dead.pid}-0123abcd"  # an export killed mid-write
    killed.mkdir()
    result = run_python(("export_to_tfhub.py", f"--albert_directory={albert_directory}",
                         "--nouse_einsum", "--nodo_lower_case",
                         f"--export_path={tmp_path / 'hub'}"), check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not killed.exists()
    assert "Einsum" not in op_types(str(tmp_path / "hub"))
    module = tf.saved_model.load(str(tmp_path / "hub"))
    assert bool(module.signatures["tokenization_info"]()["do_lower_case"]) is False
    batch = sample_batch()
    outputs = module.signatures["tokens"](input_ids=batch["input_ids"], input_mask=batch["input_mask"],
                                          segment_ids=batch["segment_ids"])
    _, model, _ = pretrained.load_pretraining_model(albert_directory)
    expected = model.encoder({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(outputs["sequence_output"], expected["sequence_output"], atol=1e-5)


def test_existing_export_path_and_missing_spm_model(albert_directory, tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError, match="taken already exists"):
        hub.export_hub_module(albert_directory, str(tmp_path / "taken"))
    empty = tmp_path / "no_spm"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="30k-clean.model or a single \\*.model"):
        hub.find_spm_model(str(empty))
    (empty / "a.model").write_bytes(b"x")
    assert hub.find_spm_model(str(empty)) == str(empty / "a.model")
    with pytest.raises(FileNotFoundError, match="--spm_model_file .*nope.model does not exist"):
        hub.find_spm_model(str(empty), str(tmp_path / "nope.model"))
    with pytest.raises(checkpoints.CheckpointNotFoundError, match="model.ckpt-9"):
        pretrained.load_pretraining_model(albert_directory, "model.ckpt-9")


for _name, _function in list(globals().items()):
    if _name.startswith("test_") and _name != "test_existing_export_path_and_missing_spm_model":
        globals()[_name] = pytest.mark.slow(_function)


HUB_KERAS_LAYER = r"""
import sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras
batch = dict(np.load(sys.argv[2]))
inputs = {"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
          "input_type_ids": batch["segment_ids"], "masked_lm_positions": batch["mlm_positions"]}
encoder = hub.load(sys.argv[1])
mlm = hub.KerasLayer(encoder.mlm, trainable=True)
out = {"mlm_logits": mlm(inputs)["mlm_logits"].numpy(),
       "trainable": np.array(len(mlm.trainable_weights))}
# One gradient step through the layer changes the MLM head's bias and the encoder.
bias = [w for w in mlm.trainable_weights if w.shape.rank == 1 and w.shape[0] == 4000][0]
before = bias.numpy().copy()
optimizer = tf_keras.optimizers.SGD(0.5)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([[11, 12], [22, 23]]), logits=mlm(inputs, training=True)["mlm_logits"]))
optimizer.apply_gradients(zip(tape.gradient(loss, mlm.trainable_weights), mlm.trainable_weights))
out["bias_moved"] = np.array(float(np.abs(bias.numpy() - before).max()))
np.savez(sys.argv[3], **out)
"""


@pytest.mark.slow
def test_encoder_mlm_is_a_trainable_hub_keras_layer(albert_directory, hub_export, tmp_path):
    """The TF Hub TF2 convention: `hub.KerasLayer(encoder.mlm, trainable=True)` gives the MLM
    logits of our model and fine-tunes (tensorflow_hub with tf-keras, as pinned for it)."""
    batch = sample_batch()
    np.savez(tmp_path / "batch.npz", **batch)
    result = run_python(("-c", HUB_KERAS_LAYER, hub_export, str(tmp_path / "batch.npz"),
                         str(tmp_path / "out.npz")), check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = dict(np.load(tmp_path / "out.npz"))
    _, model, _ = pretrained.load_pretraining_model(albert_directory)
    expected = model({"input_ids": batch["input_ids"], "input_mask": batch["input_mask"],
                      "segment_ids": batch["segment_ids"],
                      "masked_lm_positions": batch["mlm_positions"]})["mlm_logits"].numpy()
    assert loaded["mlm_logits"].shape == (2, 2, 4000)
    np.testing.assert_allclose(loaded["mlm_logits"], expected, atol=1e-4)
    assert int(loaded["trainable"]) == 25 + 5  # the encoder's and the MLM head's
    assert float(loaded["bias_moved"]) > 0
