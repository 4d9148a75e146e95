"""SQuAD heads: the original variable names and shapes, the original heads' arithmetic in numpy, the losses,
and the beam path agreeing with the teacher-forced path."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.modeling import encoder, squad_heads

B, S = 3, 20


def _config(dropout=0.0):
    return AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                        initializer_range=0.05)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    p_mask = np.ones((B, S), np.int32)
    p_mask[:, 0] = 0
    p_mask[:, 6:15] = 0  # context positions
    return {"input_ids": tf.constant(rng.integers(5, 99, (B, S)), tf.int32),
            "input_mask": tf.constant(np.r_[[1] * 16 + [0] * 4][None].repeat(B, 0), tf.int32),
            "segment_ids": tf.constant(np.r_[[0] * 6 + [1] * 10 + [0] * 4][None].repeat(B, 0),
                                       tf.int32),
            "p_mask": tf.constant(p_mask)}


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _values(model):
    return {name: v.numpy() for name, v in model.checkpoint_variables().items()}


def test_only_the_v2_model_skips_padding():
    assert squad_heads.build_squad_model(encoder.AlbertEncoder(_config(), skip_padding=True), True).encoder.skip_padding
    with pytest.raises(ValueError, match="v1.1 model keeps the padded computation"):
        squad_heads.build_squad_model(encoder.AlbertEncoder(_config(), skip_padding=True), False)

def test_v1_head_names_arithmetic_and_loss():
    model = squad_heads.AlbertSquadV1(encoder.AlbertEncoder(_config()))
    inputs = _inputs()
    outputs = model(inputs)
    head = {k: v for k, v in _values(model).items() if not k.startswith("bert/")}
    assert {k: v.shape for k, v in head.items()} == {
        "cls/squad/output_weights": (2, 32), "cls/squad/output_bias": (2,)}
    sequence = model.encoder(inputs)["sequence_output"].numpy()
    logits = sequence @ head["cls/squad/output_weights"].T + head["cls/squad/output_bias"]
    np.testing.assert_allclose(outputs["start_logits"], logits[..., 0], atol=1e-5)
    np.testing.assert_allclose(outputs["end_logits"], logits[..., 1], atol=1e-5)
    starts, ends = np.array([0, 7, 9]), np.array([0, 8, 13])
    expected = -0.5 * (_log_softmax(logits[..., 0])[np.arange(B), starts]
                       + _log_softmax(logits[..., 1])[np.arange(B), ends])
    np.testing.assert_allclose(squad_heads.v1_per_example_loss(outputs, starts, ends), expected,
                               rtol=1e-5)


V2_HEAD_SHAPES = {
    "start_logits/dense/kernel": (32, 1), "start_logits/dense/bias": (1,),
    "end_logits/dense_0/kernel": (64, 32), "end_logits/dense_0/bias": (32,),
    "end_logits/LayerNorm/beta": (32,), "end_logits/LayerNorm/gamma": (32,),
    "end_logits/dense_1/kernel": (32, 1), "end_logits/dense_1/bias": (1,),
    "answer_class/dense_0/kernel": (64, 32), "answer_class/dense_0/bias": (32,),
    "answer_class/dense_1/kernel": (32, 1),  # no bias, as the original
}


def _v2_reference(values, sequence, p_mask, start_states):
    """The original run_squad_v2 head in numpy: masked start log-probs, end log-probs given start states, cls_logits."""
    def dense(x, name, activation=None):
        y = x @ values[f"{name}/kernel"] + values.get(f"{name}/bias", 0.0)
        return activation(y) if activation else y

    def masked(logits, mask):
        return logits * (1 - mask) - 1e30 * mask

    start = masked(dense(sequence, "start_logits/dense")[..., 0], p_mask)
    x = dense(np.concatenate([np.broadcast_to(sequence, start_states.shape), start_states], -1),
              "end_logits/dense_0", np.tanh)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    x = ((x - mean) / np.sqrt(var + 1e-12) * values["end_logits/LayerNorm/gamma"]
         + values["end_logits/LayerNorm/beta"])
    end = masked(dense(x, "end_logits/dense_1")[..., 0], p_mask)
    p = np.exp(_log_softmax(start))
    features = np.concatenate([(p[..., None] * sequence).sum(1), sequence[:, 0]], -1)
    cls_logits = dense(dense(features, "answer_class/dense_0", np.tanh),
                       "answer_class/dense_1")[..., 0]
    return _log_softmax(start), _log_softmax(end), cls_logits


def test_v2_head_names_arithmetic_beam_and_loss():
    model = squad_heads.AlbertSquadV2(encoder.AlbertEncoder(_config()), start_n_top=4, end_n_top=3)
    inputs = _inputs(1)
    values = _values(model)
    assert {k: v.shape for k, v in values.items() if not k.startswith("bert/")} == V2_HEAD_SHAPES
    sequence = model.encoder(inputs)["sequence_output"].numpy()
    p_mask = inputs["p_mask"].numpy().astype(np.float32)

    starts = np.array([0, 7, 9])
    forced = model(dict(inputs, start_positions=tf.constant(starts)))
    start_states = np.repeat(sequence[np.arange(B), starts][:, None], S, 1)
    ref_start, ref_end, ref_cls = _v2_reference(values, sequence, p_mask, start_states)
    np.testing.assert_allclose(forced["start_log_probs"], ref_start, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(forced["end_log_probs"], ref_end, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(forced["cls_logits"], ref_cls, rtol=1e-4, atol=1e-5)

    beam = model(inputs)
    np.testing.assert_array_equal(beam["start_top_index"],
                                  np.argsort(-ref_start, -1, kind="stable")[:, :4])
    assert beam["end_top_index"].shape == (B, 12)
    for k in range(4):  # each start's ends = the teacher-forced ends at that start
        chosen = beam["start_top_index"].numpy()[:, k]
        given = model(dict(inputs, start_positions=tf.constant(chosen)))["end_log_probs"]
        top = np.sort(given.numpy(), -1)[:, ::-1][:, :3]
        np.testing.assert_allclose(beam["end_top_log_probs"].numpy()[:, 3 * k:3 * k + 3], top,
                                   atol=1e-5)
        np.testing.assert_array_equal(
            np.take_along_axis(given.numpy(), beam["end_top_index"].numpy()[:, 3 * k:3 * k + 3],
                               1), top)
    # Masked positions never appear in the beam.
    assert not p_mask[np.arange(B)[:, None], beam["start_top_index"].numpy()].any()
    assert not p_mask[np.arange(B)[:, None], beam["end_top_index"].numpy()].any()

    ends, impossible = np.array([0, 8, 13]), np.array([1, 0, 0])
    loss = squad_heads.v2_per_example_loss(forced, starts, ends, impossible)
    bce = np.maximum(ref_cls, 0) - ref_cls * impossible + np.log1p(np.exp(-np.abs(ref_cls)))
    expected = (-0.5 * (ref_start[np.arange(B), starts] + ref_end[np.arange(B), ends])
                + 0.5 * bce)
    np.testing.assert_allclose(loss, expected, rtol=1e-4)


def test_answer_class_dropout_only_when_training():
    model = squad_heads.AlbertSquadV2(encoder.AlbertEncoder(_config()), dropout_prob=0.5)
    inputs = dict(_inputs(2), start_positions=tf.constant([0, 7, 9]))
    a, b = (model(inputs, training=False)["cls_logits"].numpy() for _ in range(2))
    np.testing.assert_array_equal(a, b)
    c, d = (model(inputs, training=True)["cls_logits"].numpy() for _ in range(2))
    assert not np.allclose(c, d)


@pytest.mark.parametrize("version_2", [False, True])
def test_checkpoint_round_trip_under_the_original_names(tmp_path, version_2):
    config = _config()
    model = squad_heads.build_squad_model(encoder.AlbertEncoder(config), version_2)
    prefix = str(tmp_path / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, _values(model))
    names = {name for name, _ in tf.train.list_variables(prefix)}
    assert names == set(model.checkpoint_variables())
    assert (("cls/squad/output_weights" in names) != version_2
            and ("answer_class/dense_1/kernel" in names) == version_2)
    restored = squad_heads.build_squad_model(encoder.AlbertEncoder(config), version_2)
    report = checkpoints.load_into(restored.checkpoint_variables(), prefix)
    assert not report.missing and not report.mismatched
    inputs = _inputs(3)
    for name, value in model(inputs).items():
        np.testing.assert_allclose(restored(inputs)[name], value, atol=1e-6, err_msg=name)


def test_bad_beam_sizes_are_refused():
    with pytest.raises(ValueError, match="start_n_top \\(0\\)"):
        squad_heads.AlbertSquadV2(encoder.AlbertEncoder(_config()), start_n_top=0)
