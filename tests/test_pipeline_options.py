"""Training, evaluation and prediction pipelines run without tf.data's autotuning model thread,
whose wait in an iterator's destructor was seen to take 24–59 s on a 2-core machine."""

import numpy as np
import tensorflow as tf

from albert_tf.training import loop, pipeline_options, prediction
from tests import training_toys


def test_without_autotune_turns_the_model_off_and_keeps_the_data():
    dataset = tf.data.Dataset.range(20).map(lambda x: x * 3, num_parallel_calls=tf.data.AUTOTUNE)
    assert dataset.options().autotune.enabled is not False
    untuned = pipeline_options.without_autotune(dataset.prefetch(tf.data.AUTOTUNE))
    assert untuned.options().autotune.enabled is False
    assert list(untuned.as_numpy_iterator()) == list(range(0, 60, 3))


def test_the_trainers_training_data_runs_without_autotuning(tmp_path):
    trainer = loop.Trainer(training_toys.ToyTask(), tf.distribute.get_strategy(),
                           training_toys._config(str(tmp_path), num_train_steps=4))
    dataset = trainer._train_dataset()  # the default strategy hands the dataset itself back
    assert dataset.options().autotune.enabled is False
    first = next(iter(dataset))
    assert first["x"].shape[0] == trainer.config.train_batch_size


class _CountingTask(training_toys.ToyTask):
    """The toy task with a whole-set pass that counts the examples it scored."""

    def eval_step_outputs(self, batch, outputs):
        return {"logits": outputs["logits"]}

    def aggregate_logs(self, state, logs):
        return (state or 0) + len(logs["logits"])


def test_evaluation_and_prediction_read_their_data_without_autotuning(tmp_path, monkeypatch):
    seen = []
    original = pipeline_options.without_autotune

    def recording(dataset):
        untuned = original(dataset)
        seen.append(untuned.options().autotune.enabled)
        return untuned

    task = _CountingTask()
    trainer = loop.Trainer(task, tf.distribute.get_strategy(),
                           training_toys._config(str(tmp_path), num_train_steps=4))
    monkeypatch.setattr(pipeline_options, "without_autotune", recording)
    results = trainer.evaluate(batch_size=64, max_steps=2)
    assert seen == [False] and np.isfinite(results["loss"])
    scored = prediction.aggregate(task, trainer.model,
                                  task.eval_dataset(tf.distribute.InputContext(), 64).take(2))
    assert seen == [False, False] and scored == 128
