"""RACE metrics against scikit-learn, padded evaluation batches, whole-file prediction, job checks."""

import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sk_metrics

from albert_tf import errors
from albert_tf.modeling import multiple_choice
from albert_tf.race import cache, features, metrics, prepare, reader
from albert_tf.race import run as race_run
from albert_tf.race import task as race_task
from albert_tf.training import fine_tuning, prediction
from tests import race_fixtures
from tests.conftest import brown_config

SEQ = 48


def test_metrics_match_sklearn_and_the_breakdown_adds_up():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(37, 4))
    labels = rng.integers(0, 4, size=37)
    levels = rng.integers(0, 2, size=37)
    result = metrics.race_metrics(logits, labels, levels)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert result["eval_accuracy"] == pytest.approx(
        sk_metrics.accuracy_score(labels, logits.argmax(-1)))
    assert result["eval_loss"] == pytest.approx(
        sk_metrics.log_loss(labels, probabilities, labels=[0, 1, 2, 3]))
    for index, level in enumerate(reader.LEVELS):
        mask = levels == index
        assert result[f"eval_num_{level}"] == mask.sum()
        assert result[f"eval_accuracy_{level}"] == pytest.approx(
            sk_metrics.accuracy_score(labels[mask], logits[mask].argmax(-1)))
        assert result[f"eval_loss_{level}"] == pytest.approx(
            sk_metrics.log_loss(labels[mask], probabilities[mask], labels=[0, 1, 2, 3]))
    assert result["eval_num_middle"] + result["eval_num_high"] == 37
    weighted = sum(result[f"eval_accuracy_{lv}"] * result[f"eval_num_{lv}"]
                   for lv in reader.LEVELS) / 37
    assert weighted == pytest.approx(result["eval_accuracy"])
    high_only = metrics.race_metrics(logits, labels, levels, ("high",))
    assert "eval_accuracy_middle" not in high_only and "eval_num_high" in high_only


@pytest.fixture
def small_config():
    return brown_config(num_hidden_groups=1, inner_group_num=1)


@pytest.fixture
def dev_cache(tmp_path, spm_model_file):
    race_fixtures.write_all_txt(tmp_path, "dev", race_fixtures.make_articles(3, seed=4))
    settings = prepare.CacheSettings(str(tmp_path), reader.LEVELS, SEQ, 12, True,
                                     spm_model_file=spm_model_file, default_dir=str(tmp_path))
    return prepare.prepare_split(settings, "dev")  # 2 levels x 3 articles x 3 questions


@pytest.mark.parametrize("batch_size,replicas", [(4, 1), (5, 2), (18, 1), (32, 1)])
def test_padded_eval_batches_keep_every_question_once(dev_cache, small_config, batch_size,
                                                      replicas):
    task = race_task.RaceTask(small_config, SEQ)
    records = task.records(dev_cache, None).map(task._parse)
    batches = list(race_task.padded_batches(
        records, race_task._padding_record(SEQ, False), batch_size, replicas))
    assert len(batches) % replicas == 0
    assert all(b["input_ids"].shape == (batch_size, 4, SEQ) for b in batches)
    real = np.concatenate([b["is_real_example"].numpy() for b in batches])
    assert real.sum() == 18 and len(real) - 18 < batch_size * replicas
    assert (real[:18] == 1).all() and (real[18:] == 0).all()


@pytest.mark.slow
def test_prediction_matches_direct_model_calls_in_file_order(dev_cache, small_config):
    task = race_task.RaceTask(small_config, SEQ)
    strategy = tf.distribute.get_strategy()
    model = task.build_model(strategy)
    arrays = race_task.arrays_of(prediction.aggregate(task, model, task.dataset_of(dev_cache, 4),
                                                      strategy))
    records = list(cache.dataset(dev_cache, SEQ).batch(18))[0]
    expected = model({k: records[k] for k in race_task.MODEL_INPUTS}, training=False)["logits"]
    np.testing.assert_allclose(arrays["logits"], expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(arrays["label_ids"], records["label_ids"].numpy())
    np.testing.assert_array_equal(arrays["level_ids"], [0] * 9 + [1] * 9)
    np.testing.assert_allclose(arrays["probabilities"].sum(-1), 1.0, rtol=1e-6)
    ids = race_task.question_ids(dev_cache)
    assert ids[:4] == [("middle1.txt", 0), ("middle1.txt", 1), ("middle1.txt", 2),
                       ("middle2.txt", 0)]
    assert len(ids) == 18


def test_eval_loss_ignores_padding(small_config):
    task = race_task.RaceTask(small_config, SEQ)
    logits = tf.constant([[2.0, 0, 0, 0], [0, 0, 0, 5.0], [9.0, 0, 0, 0]])
    batch = {"label_ids": tf.constant([0, 1, 0]), "is_real_example": tf.constant([1, 1, 0])}
    normalizers = task.loss_normalizers(batch)
    loss = task.compute_loss(batch, {"logits": logits}, normalizers)
    expected = multiple_choice.per_example_loss(batch["label_ids"][:2], logits[:2])
    assert float(loss) == pytest.approx(float(tf.reduce_mean(expected)))
    empty = {"label_ids": tf.constant([0]), "is_real_example": tf.constant([0])}
    assert float(task.compute_loss(empty, {"logits": logits[:1]},
                                   task.loss_normalizers(empty))) == 0.0


def _job(tmp_path, config, spm_model_file, **overrides):
    arguments = dict(data_dir=str(tmp_path), output_dir=str(tmp_path / "out"),
                     albert_config=config, max_seq_length=SEQ, max_qa_length=12,
                     spm_model_file=spm_model_file)
    arguments.update(overrides)
    return race_run.RaceJob(**arguments)


def test_job_rejects_bad_settings(tmp_path, small_config, spm_model_file):
    with pytest.raises(errors.UserInputError, match="--max_seq_length=65 exceeds max_position"):
        _job(tmp_path, small_config, spm_model_file, max_seq_length=65)
    with pytest.raises(ValueError, match="--max_qa_length=46"):
        _job(tmp_path, small_config, spm_model_file, max_qa_length=46)
    with pytest.raises(errors.UserInputError, match="--spm_model_file .* or --vocab_file"):
        _job(tmp_path, small_config, None)
    with pytest.raises(errors.UserInputError, match="--dropout_prob=1.0"):
        _job(tmp_path, small_config, spm_model_file, dropout_prob=1.0)
    job = _job(tmp_path, small_config, spm_model_file)
    with pytest.raises(errors.UserInputError, match="--allow_random_init"):
        job.check_init_checkpoint(None, allow_random_init=False, do_train=True)
    job.check_init_checkpoint(None, allow_random_init=True, do_train=True)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        job.check_init_checkpoint(str(tmp_path / "nowhere"), False, True)
    with pytest.raises(errors.UserInputError, match="no model.ckpt-best and no checkpoint"):
        fine_tuning.best_checkpoint(str(tmp_path / "out"))


def test_job_data_errors_name_the_file_and_article(tmp_path, small_config, spm_model_file):
    data = race_fixtures.make_articles(2)
    data["middle"][1]["answers"][0] = "F"
    race_fixtures.write_per_article(tmp_path, "train", data)
    job = _job(tmp_path, small_config, spm_model_file)
    with pytest.raises(reader.RaceDataError,
                       match=r"RACE/train/middle/2.txt: article `middle2.txt`: question 0"):
        job.cache("train")
    assert not list((tmp_path / "out").glob("*.tf_record"))


def test_cache_is_reused_only_with_the_same_settings(tmp_path, spm_model_file):
    race_fixtures.write_all_txt(tmp_path, "dev", race_fixtures.make_articles(2))
    settings = prepare.CacheSettings(str(tmp_path), reader.LEVELS, SEQ, 12, True,
                                     spm_model_file=spm_model_file, default_dir=str(tmp_path))
    path = prepare.prepare_split(settings, "dev", str(tmp_path / "c" / "dev.tf_record"))
    assert path.startswith(str(tmp_path / "c" / "dev.race-dev-middle+high-seq48-qa12-uncased"))
    stamp = (tmp_path / path).stat().st_mtime_ns
    assert prepare.prepare_split(settings, "dev", str(tmp_path / "c" / "dev.tf_record")) == path
    assert (tmp_path / path).stat().st_mtime_ns == stamp
    high = prepare.CacheSettings(**{**settings.__dict__, "levels": ("high",)})
    high_path = prepare.prepare_split(high, "dev", str(tmp_path / "c" / "dev.tf_record"))
    assert high_path != path
    assert len(race_task.question_ids(high_path)) == 6
    assert set(race_task.question_ids(high_path)) == {
        question for question in race_task.question_ids(path) if question[0].startswith("high")}
    with pytest.raises(ValueError, match="--max_qa_length"):
        prepare.prepare_split(prepare.CacheSettings(**{**settings.__dict__, "max_qa_length": 0}),
                              "dev")
    assert features.LEVEL_IDS == {"middle": 0, "high": 1}
