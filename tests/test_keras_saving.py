"""Keras saving: every model round-trips through `get_config`/`from_config` and a `.keras` file
with the same outputs, its config and constructor arguments intact."""

import keras
import numpy as np
import pytest

from albert_tf.config import AlbertConfig
from albert_tf.modeling import (classifier, encoder, multiple_choice, pretraining, squad_heads,
                                token_classifier)


def _config():
    return AlbertConfig(vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                        num_hidden_groups=1, num_attention_heads=4, intermediate_size=37,
                        max_position_embeddings=40)


def _inputs(choices=None):
    rng = np.random.default_rng(0)
    shape = (2, choices, 8) if choices else (2, 8)
    ids = rng.integers(5, 97, shape).astype(np.int32)
    mask = np.ones_like(ids)
    mask[..., 6:] = 0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


MODELS = {
    "encoder": (lambda c: encoder.AlbertEncoder(c), _inputs, "sequence_output"),
    "pretraining": (lambda c: pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(c)),
                    lambda: dict(_inputs(), masked_lm_positions=np.array([[1, 2], [0, 3]], np.int32)),
                    "mlm_logits"),
    "classifier": (lambda c: classifier.AlbertClassifier(encoder.AlbertEncoder(c), 3, dropout_rate=0.2), _inputs, "logits"),
    "multiple_choice": (lambda c: multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(c), num_choices=4),
                        lambda: _inputs(4), "logits"),
    "squad_v1": (lambda c: squad_heads.AlbertSquadV1(encoder.AlbertEncoder(c)), _inputs, "start_logits"),
    "squad_v2": (lambda c: squad_heads.AlbertSquadV2(encoder.AlbertEncoder(c), start_n_top=3, end_n_top=2),
                 lambda: dict(_inputs(), p_mask=np.zeros([2, 8], np.float32)), "cls_logits"),
    "token_classifier": (lambda c: token_classifier.AlbertTokenClassifier(encoder.AlbertEncoder(c), 5), _inputs, "logits"),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_keras_file_round_trip(name, tmp_path):
    build, make_inputs, output = MODELS[name]
    model = build(_config())
    inputs = make_inputs()
    expected = model(inputs, training=False)[output].numpy()

    clone = type(model).from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    assert clone.config == model.config

    path = str(tmp_path / f"{name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    assert loaded.config == model.config
    np.testing.assert_allclose(loaded(inputs, training=False)[output].numpy(), expected, atol=1e-6)
    for (stored, variable), (_, original) in zip(loaded.checkpoint_variables().items(),
                                                 model.checkpoint_variables().items()):
        np.testing.assert_array_equal(variable.numpy(), original.numpy(), err_msg=stored)


def test_task_model_config_holds_its_encoder(tmp_path):
    """keras-hub's layout: the head's config carries the serialized encoder, whose switches
    come back with it, and the rebuilt head sits on the rebuilt encoder's variables."""
    bert = encoder.AlbertEncoder(_config(), use_one_hot_embeddings=True, skip_padding=True)
    model = classifier.AlbertClassifier(bert, 3, dropout_rate=0.2)
    stored = model.get_config()
    assert stored["encoder"]["class_name"] == "AlbertEncoder"
    assert stored["encoder"]["config"]["skip_padding"]
    assert stored["encoder"]["config"]["use_one_hot_embeddings"]
    assert {"num_labels": 3, "dropout_rate": 0.2}.items() <= stored.items()
    inputs = _inputs()
    expected = model(inputs)["logits"].numpy()

    path = str(tmp_path / "classifier.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.encoder) is encoder.AlbertEncoder and loaded.encoder.name == "bert"
    assert loaded.encoder.skip_padding and loaded.encoder.embeddings.use_one_hot_embeddings
    for name, variable in loaded.encoder.checkpoint_variables().items():
        assert loaded.checkpoint_variables()[name] is variable, name
    np.testing.assert_allclose(loaded(inputs)["logits"].numpy(), expected, atol=1e-6)
