"""The multiple-choice head against Hugging Face `AlbertForMultipleChoice` on the same weights."""

import numpy as np
import pytest

from albert_tf import checkpoints
from albert_tf.huggingface import hf_interop
from albert_tf.modeling import encoder, multiple_choice


def _inputs(batch, seq_length, vocab_size, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, size=(batch, 4, seq_length)).astype(np.int32)
    lengths = rng.integers(seq_length // 2, seq_length + 1, size=(batch, 4))
    mask = (np.arange(seq_length)[None, None, :] < lengths[..., None]).astype(np.int32)
    segments = (np.arange(seq_length)[None, None, :] >= lengths[..., None] // 2).astype(np.int32)
    return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}


def test_head_variables_in_the_original_layout(tiny_config):
    model = multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(tiny_config), dropout_prob=0.1)
    names = model.checkpoint_variables()
    assert tuple(names["output_weights"].shape) == (1, tiny_config.hidden_size)
    assert tuple(names["output_bias"].shape) == (1,)
    assert "bert/embeddings/word_embeddings" in names
    assert "bert/pooler/dense/kernel" in names
    assert set(names) - set(model.encoder.checkpoint_variables()) == {"output_weights", "output_bias"}
    assert len(names) == len(model.trainable_variables)
    np.testing.assert_array_equal(names["output_bias"].numpy(), [0.0])
    weights = names["output_weights"].numpy()
    assert np.abs(weights).max() <= 2 * 0.02 and weights.std() > 0.005  # truncated normal, 0.02


def test_dropout_only_when_training_and_loss(tiny_config):
    model = multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(tiny_config), dropout_prob=0.5)
    inputs = _inputs(3, 16, tiny_config.vocab_size)
    first = model(inputs, training=False)
    again = model(inputs, training=False)
    np.testing.assert_array_equal(first["logits"].numpy(), again["logits"].numpy())
    assert first["logits"].shape == (3, 4)
    np.testing.assert_allclose(first["probabilities"].numpy().sum(-1), 1.0, rtol=1e-6)
    trained = model(inputs, training=True)
    assert not np.allclose(first["logits"].numpy(), trained["logits"].numpy())
    labels = np.array([0, 3, 1])
    logits = first["logits"].numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(
        multiple_choice.per_example_loss(labels, first["logits"]).numpy(),
        -log_probs[np.arange(3), labels], rtol=1e-5)


@pytest.mark.slow
def test_logits_match_hugging_face(tiny_config, tmp_path):
    import torch
    from transformers.models.albert import modeling_albert

    tiny_config.hidden_dropout_prob = tiny_config.attention_probs_dropout_prob = 0.0
    model = multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(tiny_config), dropout_prob=0.1)
    model.checkpoint_variables()["output_bias"].assign([0.25])
    prefix = str(tmp_path / "model.ckpt-1")
    checkpoints.write_checkpoint(
        prefix, {name: v.numpy() for name, v in model.checkpoint_variables().items()})

    hf_config = hf_interop.huggingface_config(
        tiny_config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.1, attn_implementation=None)
    hf_model = modeling_albert.AlbertForMultipleChoice(hf_config)
    hf_interop.load_original_checkpoint(hf_model, prefix)
    hf_model.eval()

    inputs = _inputs(2, 24, tiny_config.vocab_size, seed=3)
    ours = model(inputs, training=False)["logits"].numpy()
    with torch.no_grad():
        theirs = hf_model(
            input_ids=torch.from_numpy(inputs["input_ids"]).long(),
            attention_mask=torch.from_numpy(inputs["input_mask"]).long(),
            token_type_ids=torch.from_numpy(inputs["segment_ids"]).long()).logits.numpy()
    np.testing.assert_allclose(ours, theirs, atol=2e-5, rtol=1e-4)
    assert np.abs(ours).max() > 0
