"""`albert_tf.AlbertTextClassifier`, the Keras task model on raw strings (docs/keras.md): the
page's example as written, Keras' metrics on its logits, the optimizers under `compile` against
the training loop's own, the preset folder it writes against what the scripts read, and the
inputs it refuses."""

import csv
import os
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf import checkpoints, errors
from albert_tf.glue import movie_reviews
from albert_tf.keras_tasks import presets
from albert_tf.modeling import encoder
from albert_tf.training import optimization
from tests.conftest import REPO_ROOT, brown_config

SHORT_TEXTS = ["a gripping film", "dull and tired", "wonderful acting", "a boring mess",
               "the best of the year", "far too long", "quietly moving", "a tired plot"]
SHORT_LABELS = ["pos", "neg", "pos", "neg", "pos", "neg", "pos", "neg"]


def write_pretrained_preset(folder, spm_model_file, **config_changes):
    """A tiny randomly initialised 'pretrained' model in a published tarball's layout."""
    os.makedirs(folder)
    config = brown_config(**config_changes)
    config.to_json_file(os.path.join(folder, "albert_config.json"))
    shutil.copyfile(spm_model_file, os.path.join(folder, "30k-clean.model"))
    keras.utils.set_random_seed(1)
    checkpoints.write_checkpoint(os.path.join(folder, "model.ckpt-0"),
                                 dict(encoder.AlbertEncoder(config).checkpoint_variables(),
                                      global_step=0))
    return folder


def review_label(score):
    return "negative" if score < -0.5 else "positive" if score > 0.5 else "neutral"


def write_reviews_csv(path, real_data, count):
    reviews = movie_reviews.read_reviews(real_data["movie_reviews"])[:count]
    with open(path, "w", newline="", encoding="utf-8") as writer:
        table = csv.writer(writer)
        table.writerow(["text", "label"])
        for review in reviews:
            table.writerow([review.text, review_label(review.score)])


def docs_example():
    with open(os.path.join(REPO_ROOT, "docs", "keras.md"), encoding="utf-8") as reader:
        return re.search(r"^```python\n(.*?)^```", reader.read(), flags=re.S | re.M).group(1)


@pytest.fixture(scope="module")
def pretrained(spm_model_file, tmp_path_factory):
    return write_pretrained_preset(str(tmp_path_factory.mktemp("preset") / "tiny"), spm_model_file)


@pytest.mark.slow
def test_the_docs_example_runs_as_written(real_data, spm_model_file, tmp_path, monkeypatch):
    write_pretrained_preset(str(tmp_path / "albert_base"), spm_model_file)
    write_reviews_csv(tmp_path / "reviews.csv", real_data, 240)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(docs_example(), "docs/keras.md", "exec"), namespace)  # noqa: S102

    model = namespace["model"]
    assert model.label_names == ["negative", "neutral", "positive"]
    assert int(model.optimizer.iterations) > 0
    # The folder is the scripts' layout: the original names, the trained head, the step.
    saved = checkpoints.list_variables(str(tmp_path / "my_classifier"))
    assert saved["output_weights"] == (3, 32) and saved["global_step"] == ()
    assert "bert/embeddings/word_embeddings" in saved
    stored = checkpoints.read_tensors(str(tmp_path / "my_classifier"), ["output_weights"])
    np.testing.assert_array_equal(stored["output_weights"],
                                  model.checkpoint_variables()["output_weights"].numpy())
    # The export answers with the label names, as the model does.
    versions = os.listdir(tmp_path / "my_classifier" / "export")
    exported = tf.saved_model.load(str(tmp_path / "my_classifier" / "export" / versions[0]))
    texts = namespace["texts"][:6]
    answer = exported.signatures["text"](text_a=tf.constant(texts), text_b=tf.constant([""] * 6))
    assert [label.decode() for label in answer["label"].numpy()] == model.predict_labels(texts)
    np.testing.assert_allclose(answer["probabilities"].numpy(),
                               tf.nn.softmax(model.predict(texts, verbose=0)).numpy(), atol=1e-5)


@pytest.mark.slow
def test_compile_with_accuracy_reports_the_accuracy_of_the_predictions(pretrained):
    model = albert_tf.AlbertTextClassifier.from_preset(pretrained, num_classes=2)
    model.compile(optimizer=albert_tf.AdamWeightDecay(1e-3), metrics=["accuracy"])
    history = model.fit(SHORT_TEXTS, SHORT_LABELS, batch_size=4, epochs=2, verbose=0)
    assert set(history.history) == {"accuracy", "loss"}
    result = model.evaluate(SHORT_TEXTS, SHORT_LABELS, batch_size=3, return_dict=True, verbose=0)
    logits = model.predict(SHORT_TEXTS, batch_size=5, verbose=0)
    labels = np.array([model.label_names.index(label) for label in SHORT_LABELS])
    assert result["accuracy"] == pytest.approx(np.mean(np.argmax(logits, -1) == labels))
    expected_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    assert result["loss"] == pytest.approx(float(expected_loss), rel=1e-5)
    # Pairs of strings, and a batch of strings called directly.
    assert model.predict((SHORT_TEXTS, SHORT_TEXTS[::-1]), verbose=0).shape == (8, 2)
    np.testing.assert_allclose(model(np.array(SHORT_TEXTS[:3])).numpy(), logits[:3], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_a_fit_step_is_the_training_loops_optimizer_step(pretrained, name):
    """One `fit` step under compile(optimizer=<the Keras class>) moves every variable as the
    training loop's optimizer (`optimization.create_optimizer`, checked against a NumPy
    transcription of the original in test_optimization.py) does on the same gradients."""
    model = albert_tf.AlbertTextClassifier.from_preset(pretrained, num_classes=2, dropout=0.0)
    twin = albert_tf.AlbertTextClassifier.from_preset(pretrained, num_classes=2, dropout=0.0)
    for variable, value in zip(twin.checkpoint_variables().values(),
                               model.checkpoint_variables().values()):
        variable.assign(value)
    keras_class = albert_tf.LAMB if name == "lamb" else albert_tf.AdamWeightDecay
    model.compile(optimizer=keras_class(1e-2, weight_decay_rate=1.0))  # decay visible
    labels = np.array([0, 1] * 4)
    model.fit(SHORT_TEXTS, labels, batch_size=8, epochs=1, shuffle=False, verbose=0)

    names = twin.checkpoint_variables()
    original = optimization.create_optimizer(1e-2, num_train_steps=10**9, num_warmup_steps=0,
                                             optimizer=name, variable_names=names,
                                             weight_decay_rate=1.0)
    with tf.GradientTape() as tape:
        logits = twin(twin.preprocessor(tf.constant(SHORT_TEXTS)), training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    variables = list(names.values())
    initial = [variable.numpy() for variable in variables]
    original.apply(tape.gradient(loss, variables), variables)
    for (key, expected), actual in zip(names.items(), model.checkpoint_variables().values()):
        # A step moves a weight by about lr·(1 + |w|); summation order differs by ~1e-6.
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=key)
    moved = sum(not np.array_equal(before, after.numpy()) for before, after in zip(initial, variables))
    assert moved > len(names) // 2
    # LayerNorm and bias variables are excluded from weight decay by their original names.
    decays = dict(zip(model.optimizer._slot_owner_names, model.optimizer._decays))
    assert decays["bert/embeddings/LayerNorm/gamma"] is False
    assert decays["output_bias"] is False and decays["output_weights"] is True


@pytest.mark.slow
def test_a_saved_head_is_kept_and_another_label_count_gets_a_new_one(pretrained, tmp_path):
    model = albert_tf.AlbertTextClassifier.from_preset(pretrained, label_names=["neg", "pos"])
    model.fit(SHORT_TEXTS, SHORT_LABELS, batch_size=8, verbose=0)
    model.save_to_preset(str(tmp_path / "saved"))
    kept = albert_tf.AlbertTextClassifier.from_preset(str(tmp_path / "saved"))
    assert kept.label_names == ["neg", "pos"] and kept.preprocessor.max_seq_length == 64
    np.testing.assert_array_equal(kept.checkpoint_variables()["output_weights"].numpy(),
                                  model.checkpoint_variables()["output_weights"].numpy())
    fresh = albert_tf.AlbertTextClassifier.from_preset(str(tmp_path / "saved"), num_classes=3)
    assert fresh.label_names == ["0", "1", "2"]
    assert fresh.checkpoint_variables()["output_weights"].shape == (3, 32)
    np.testing.assert_array_equal(fresh.backbone.embedding_table.numpy(),
                                  model.backbone.embedding_table.numpy())
    with pytest.raises(errors.UserInputError, match="exists and is not an empty"):
        model.save_to_preset(str(tmp_path / "saved"))
    with pytest.raises(errors.UserInputError, match="unknown label 'maybe'"):
        model.fit(SHORT_TEXTS[:2], ["pos", "maybe"], verbose=0)


def test_folders_that_are_not_presets_are_refused_naming_the_file(pretrained, tmp_path):
    with pytest.raises(presets.PresetError, match="albert_config.json: missing"):
        presets.read_preset(str(tmp_path))
    broken = tmp_path / "no_spm"
    shutil.copytree(pretrained, broken)
    os.remove(broken / "30k-clean.model")
    with pytest.raises(presets.PresetError, match=r"no_spm: no SentencePiece model \(\*\.model\)"):
        presets.read_preset(str(broken))
    with pytest.raises(errors.UserInputError, match="has no head; give num_classes"):
        albert_tf.AlbertTextClassifier.from_preset(pretrained)
    preset = presets.read_preset(pretrained)
    assert preset.checkpoint.endswith("model.ckpt-0") and preset.task == {}


def test_a_run_s_labels_txt_names_the_head_when_no_task_file_is_there(tmp_path):
    """run_classifier.py on your own files and import_from_hf.py write labels.txt beside the
    checkpoint, one label a line: from_preset takes the head's label names from it."""
    from albert_tf.glue import own_files
    from albert_tf.keras_tasks import presets
    own_files.write_label_names(str(tmp_path), ("negative", "neutral", "positive"))
    assert presets._task(str(tmp_path)) == {"label_names": ["negative", "neutral", "positive"]}
    assert presets._task(str(tmp_path / "elsewhere")) == {}
