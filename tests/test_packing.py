"""Skipping padding inside a batch (`modeling.packing`): the same outputs and gradients at every
real token as the padded computation, zeros at padding, under eager, graph and XLA execution."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling import encoder as encoder_lib
from albert_tf.modeling import packing
from albert_tf.training import length_buckets
from tests.conftest import copy_weights

LENGTHS = (5, 16, 1, 11)  # a full row, a one-token row and two in between
SEQ = 16


def _inputs(lengths=LENGTHS, seq=SEQ):
    rng = np.random.default_rng(3)
    mask = (np.arange(seq)[np.newaxis, :] < np.array(lengths)[:, np.newaxis]).astype(np.int32)
    ids = np.where(mask == 1, rng.integers(5, 99, mask.shape), 0).astype(np.int32)
    segments = np.where(np.arange(seq) >= 3, mask, 0).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def test_pack_and_unpack_by_hand():
    mask = tf.constant([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    rows = tf.reshape(tf.range(1.0, 19.0), [3, 3, 2])  # row r, position p: [6r+2p+1, 6r+2p+2]
    packed = packing.Packing(mask)
    np.testing.assert_array_equal(packed.pack(rows), [[1, 2], [3, 4], [7, 8], [13, 14],
                                                      [15, 16], [17, 18]])
    np.testing.assert_array_equal(packed.unpack(packed.pack(rows)),
                                  rows * tf.cast(mask, tf.float32)[:, :, tf.newaxis])


@pytest.mark.parametrize("mask", [[[0, 0, 0], [0, 0, 0]], [[1, 1, 0], [0, 0, 0]]])
def test_rows_of_padding_only_come_back_as_zeros(tiny_config, mask):
    """A row (or a whole batch, as an export's zero-filled build call) without real tokens."""
    skipping = encoder_lib.AlbertEncoder(tiny_config, skip_padding=True)
    mask = np.array(mask, np.int32)
    outputs = skipping({"input_ids": mask * 7, "input_mask": mask})
    np.testing.assert_array_equal(outputs["sequence_output"].numpy()[mask == 0], 0.0)
    assert outputs["pooled_output"].shape == (2, tiny_config.hidden_size)


def _encoder_pair(config):
    padded = encoder_lib.AlbertEncoder(config)
    skipping = encoder_lib.AlbertEncoder(config, skip_padding=True)
    copy_weights(padded, skipping)
    return padded, skipping


def test_real_tokens_equal_the_padded_encoder(tiny_config):
    padded, skipping = _encoder_pair(tiny_config)
    inputs = _inputs()
    expected, actual = padded(inputs), skipping(inputs)
    real = inputs["input_mask"] == 1
    np.testing.assert_allclose(actual["sequence_output"].numpy()[real],
                               expected["sequence_output"].numpy()[real], atol=1e-5)
    np.testing.assert_array_equal(actual["sequence_output"].numpy()[~real], 0.0)
    np.testing.assert_allclose(actual["pooled_output"], expected["pooled_output"], atol=1e-5)
    for mine, theirs in zip(actual["encoder_outputs"], expected["encoder_outputs"]):
        np.testing.assert_allclose(mine.numpy()[real], theirs.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(actual["embedding_output"], expected["embedding_output"])


def test_mixed_bfloat16_skips_padding_with_float32_outputs(tiny_config):
    padded = encoder_lib.AlbertEncoder(tiny_config)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        skipping = encoder_lib.AlbertEncoder(tiny_config, skip_padding=True)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    copy_weights(padded, skipping)
    inputs = _inputs()
    actual, expected = skipping(inputs), padded(inputs)
    real = inputs["input_mask"] == 1
    assert actual["sequence_output"].dtype == tf.float32
    np.testing.assert_allclose(actual["sequence_output"].numpy()[real],
                               expected["sequence_output"].numpy()[real], atol=0.1)
    np.testing.assert_allclose(actual["pooled_output"], expected["pooled_output"], atol=0.1)


def _pooled_loss_gradients(model, inputs):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(model(inputs, training=False)["pooled_output"]))
    return [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, model.trainable_variables)]


def test_gradients_equal_the_padded_encoder(tiny_config):
    padded, skipping = _encoder_pair(tiny_config)
    inputs = _inputs()
    for mine, theirs, variable in zip(_pooled_loss_gradients(skipping, inputs),
                                      _pooled_loss_gradients(padded, inputs),
                                      padded.trainable_variables):
        np.testing.assert_allclose(mine, theirs, atol=1e-5, rtol=1e-5, err_msg=variable.path)


def test_traced_for_any_shape_and_under_xla(tiny_config):
    """One tf.function with unknown batch and length serves every shape; XLA compiles it."""
    padded, skipping = _encoder_pair(tiny_config)
    spec = {name: tf.TensorSpec([None, None], tf.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}
    traced = tf.function(lambda x: skipping(x)["pooled_output"], input_signature=[spec])
    compiled = tf.function(lambda x: skipping(x)["pooled_output"], jit_compile=True)
    for lengths, seq in ((LENGTHS, SEQ), ((2, 7), 8), ((9,), 9)):
        inputs = _inputs(lengths, seq)
        expected = padded(inputs)["pooled_output"]
        np.testing.assert_allclose(traced(inputs), expected, atol=1e-5)
        np.testing.assert_allclose(compiled(inputs), expected, atol=1e-5)


def test_skips_padding_wherever_batches_are_cut_except_on_tpu(monkeypatch):
    strategy = tf.distribute.get_strategy()
    assert length_buckets.Batching.resolve("16,64", 64, strategy).skip_padding
    assert not length_buckets.Batching.resolve("off", 64, strategy).skip_padding
    monkeypatch.setattr(length_buckets.strategy_lib, "is_tpu", lambda _: True)
    assert not length_buckets.Batching.resolve("16,64", 64, strategy).skip_padding
