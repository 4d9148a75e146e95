"""The MLM + SOP task: losses (the original run_pretraining.py) and metrics against NumPy, global-batch normalisation."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining import task as pretraining_task


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _batch(seed=0, batch=6, predictions=5, vocab=11):
    rng = np.random.default_rng(seed)
    weights = (rng.random((batch, predictions)) < 0.7).astype(np.float32)
    weights[0] = 0.0  # an example without any masked position
    features = {
        "masked_lm_ids": rng.integers(0, vocab, (batch, predictions)).astype(np.int32),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32),
        "input_ids": np.zeros((batch, 8), np.int32),
    }
    outputs = {"mlm_logits": rng.normal(size=(batch, predictions, vocab)).astype(np.float32),
               "sop_logits": rng.normal(size=(batch, 2)).astype(np.float32)}
    return features, outputs


def _reference(features, outputs):
    """The original model_fn's numbers, transcribed from the spec."""
    logp = _log_softmax(outputs["mlm_logits"].astype(np.float64))
    ids, w = features["masked_lm_ids"], features["masked_lm_weights"]
    per_position = -np.take_along_axis(logp, ids[..., None], -1)[..., 0]
    mlm_loss = np.sum(w * per_position) / (np.sum(w) + 1e-5)
    sop_logp = _log_softmax(outputs["sop_logits"].astype(np.float64))
    labels = features["next_sentence_labels"].reshape(-1)
    sop_per_example = -sop_logp[np.arange(len(labels)), labels]
    return {
        "loss": mlm_loss + sop_per_example.mean(),
        "masked_lm_accuracy": np.sum(w * (logp.argmax(-1) == ids)) / np.sum(w),
        "masked_lm_loss": np.sum(w * per_position) / np.sum(w),
        "sentence_order_accuracy": np.mean(sop_logp.argmax(-1) == labels),
        "sentence_order_loss": sop_per_example.mean(),
    }


def _task():
    return pretraining_task.PretrainingTask.__new__(pretraining_task.PretrainingTask)


def test_loss_and_metrics_match_the_original_formulas():
    features, outputs = _batch()
    task = _task()
    expected = _reference(features, outputs)
    loss = task.compute_loss(features, outputs, task.loss_normalizers(features))
    assert float(loss) == pytest.approx(expected["loss"], rel=1e-6)
    metrics = task.build_metrics()
    assert sorted(metrics) == ["masked_lm_accuracy", "masked_lm_loss",
                               "sentence_order_accuracy", "sentence_order_loss"]
    task.update_metrics(metrics, features, outputs)
    for name, metric in metrics.items():
        assert float(metric.result()) == pytest.approx(expected[name], rel=1e-5), name


def test_split_batch_shares_add_up_to_the_whole_batch_loss():
    """Micro-batches or replicas each add their share; the sum is the k·b loss."""
    features, outputs = _batch(seed=3, batch=8)
    task = _task()
    normalizers = task.loss_normalizers(features)  # the loop sums these over the whole batch
    halves = [slice(0, 2), slice(2, 8)]
    total = sum(float(task.compute_loss({k: v[h] for k, v in features.items()},
                                        {k: v[h] for k, v in outputs.items()}, normalizers))
                for h in halves)
    assert total == pytest.approx(_reference(features, outputs)["loss"], rel=1e-6)
    assert float(normalizers["masked_lm_weights"]) == features["masked_lm_weights"].sum()
    assert float(normalizers["examples"]) == 8


def test_max_seq_length_beyond_position_embeddings_is_refused(tiny_config):
    with pytest.raises(ValueError, match="--max_seq_length=65 exceeds max_position_embeddings=64"):
        pretraining_task.PretrainingTask(tiny_config, "x", 65, 10)


def test_model_inputs_only_reach_the_model(tiny_config):
    task = pretraining_task.PretrainingTask(tiny_config, "x", 16, 3)
    model = task.build_model(tf.distribute.get_strategy())
    features = {"input_ids": tf.ones((2, 16), tf.int32), "input_mask": tf.ones((2, 16), tf.int32),
                "segment_ids": tf.zeros((2, 16), tf.int32),
                "masked_lm_positions": tf.constant([[1, 2, 3], [4, 5, 0]]),
                "masked_lm_ids": tf.ones((2, 3), tf.int32),
                "masked_lm_weights": tf.ones((2, 3)), "next_sentence_labels": tf.zeros((2, 1),
                                                                                    tf.int32)}
    outputs = task.call_model(model, features, training=False)
    assert outputs["mlm_logits"].shape == (2, 3, 99) and outputs["sop_logits"].shape == (2, 2)
    names = list(model.checkpoint_variables())
    assert "cls/predictions/output_bias" in names and "cls/seq_relationship/output_weights" in names


def _head_and_encoder_gradients(tiny_config, weight):
    """Gradients of the task's loss for the sentence-order head's and the encoder's variables."""
    tf.random.set_seed(0)
    task = pretraining_task.PretrainingTask(tiny_config, "x", 16, 3, sentence_order_loss_weight=weight)
    model = task.build_model(tf.distribute.get_strategy())
    features = {"input_ids": tf.constant([[5, 6, 7, 8] * 4, [9, 10, 11, 12] * 4]),
                "input_mask": tf.ones((2, 16), tf.int32), "segment_ids": tf.zeros((2, 16), tf.int32),
                "masked_lm_positions": tf.constant([[1, 2, 3], [4, 5, 0]]),
                "masked_lm_ids": tf.constant([[3, 4, 5], [6, 7, 0]]),
                "masked_lm_weights": tf.constant([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
                "next_sentence_labels": tf.constant([[0], [1]])}
    with tf.GradientTape() as tape:
        outputs = task.call_model(model, features, training=False)
        loss = task.compute_loss(features, outputs, task.loss_normalizers(features))
    head, encoder = model.sop_head.trainable_variables, model.encoder.trainable_variables
    gradients = tape.gradient(loss, head + encoder, unconnected_gradients="zero")
    dense = [tf.convert_to_tensor(g).numpy() for g in gradients]  # the embeddings: IndexedSlices
    return dense[:len(head)], dense[len(head):]


def test_sentence_order_loss_weight_zero_trains_the_masked_lm_alone(tiny_config):
    head, encoder = _head_and_encoder_gradients(tiny_config, 0.0)
    assert head and all(not np.any(g) for g in head)
    assert any(np.any(g) for g in encoder)  # the masked LM still trains the encoder
    head_with_sop, _ = _head_and_encoder_gradients(tiny_config, 1.0)
    assert any(np.any(g) for g in head_with_sop)


def test_sentence_order_loss_weight_scales_the_sentence_order_loss():
    features, outputs = _batch()
    expected = _reference(features, outputs)
    task = pretraining_task.PretrainingTask.__new__(pretraining_task.PretrainingTask)
    task.sentence_order_loss_weight = 0.25
    loss = task.compute_loss(features, outputs, task.loss_normalizers(features))
    assert float(loss) == pytest.approx(
        expected["masked_lm_loss"] + 0.25 * expected["sentence_order_loss"], rel=1e-6)
