"""The evaluate-every-checkpoint loop, the shared flags and the strategy choice."""

import json
import time

from absl import app, flags
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.training import evaluation, flags as training_flags, strategy as strategy_lib

# accuracy of each fake checkpoint: step 2 is the best, step 4 the last.
ACCURACY = {1: 0.5, 2: 0.9, 3: 0.7, 4: 0.8}


def _write(directory, step):
    checkpoints.write_checkpoint(str(directory / f"model.ckpt-{step}"),
                                 {"w": np.full((3,), float(step), np.float32),
                                  "global_step": np.int64(step)})


def _evaluate_fn(calls):
    def evaluate(path):
        step = int(checkpoints.read_tensors(path, ["global_step"])["global_step"])
        calls.append(step)
        return {"accuracy": ACCURACY[step], "loss": 1 - ACCURACY[step], "global_step": step}
    return evaluate


def test_evaluates_every_checkpoint_keeps_the_best_and_continues_after_restart(tmp_path):
    for step in (1, 2):
        _write(tmp_path, step)
    calls = []
    first = evaluation.CheckpointEvaluator(str(tmp_path), _evaluate_fn(calls), "accuracy",
                                           last_step=4, poll_seconds=0.01, timeout_seconds=0.2)
    summary = first.run()  # times out: steps 3 and 4 do not exist yet
    assert calls == [1, 2]
    assert summary == {"best_step": 2, "best_value": 0.9, "last_evaluated": 2}
    assert (tmp_path / "best_trial.txt").read_text() == "2:2:0.9\n"
    best = checkpoints.read_tensors(str(tmp_path / "model.ckpt-best"))
    np.testing.assert_array_equal(best["w"], [2.0, 2.0, 2.0])
    for step in (3, 4):
        _write(tmp_path, step)
    second = evaluation.CheckpointEvaluator(str(tmp_path), _evaluate_fn(calls), "accuracy",
                                            last_step=4, poll_seconds=0.01, timeout_seconds=30)
    started = time.time()
    assert second.run() == {"best_step": 2, "best_value": 0.9, "last_evaluated": 4}
    assert time.time() - started < 10  # stopped at last_step, not at the timeout
    assert calls == [1, 2, 3, 4]
    lines = (tmp_path / "eval_results.txt").read_text().splitlines()
    assert lines[:6] == ["accuracy = 0.5", "global_step = 1", "loss = 0.5",
                         "best_accuracy = 0.5", "best_global_step = 1", "accuracy = 0.9"]
    assert lines[-5:] == ["accuracy = 0.8", "global_step = 4", "loss = 0.19999999999999996",
                          "best_accuracy = 0.9", "best_global_step = 2"]
    np.testing.assert_array_equal(
        checkpoints.read_tensors(str(tmp_path / "model.ckpt-best"))["w"], [2.0, 2.0, 2.0])


def test_lower_is_better_and_only_latest(tmp_path):
    for step in (1, 2, 3):
        _write(tmp_path, step)
    calls = []
    evaluator = evaluation.CheckpointEvaluator(
        str(tmp_path), _evaluate_fn(calls), "loss", higher_is_better=False, last_step=3,
        only_latest=True, poll_seconds=0.01, timeout_seconds=1)
    assert evaluator.run() == {"best_step": 3, "best_value": pytest.approx(0.3),
                               "last_evaluated": 3}
    assert calls == [3]  # the original run_pretraining evaluates the latest checkpoint only


def test_bad_state_file_and_missing_metric_are_named(tmp_path):
    (tmp_path / "best_trial.txt").write_text("garbage\n")
    with pytest.raises(ValueError, match="best_trial.txt: expected 'last_step:best_step"):
        evaluation.CheckpointEvaluator(str(tmp_path), lambda p: {}, "accuracy")
    (tmp_path / "best_trial.txt").unlink()
    _write(tmp_path, 1)
    evaluator = evaluation.CheckpointEvaluator(str(tmp_path), lambda p: {"f1": 1.0}, "accuracy",
                                               last_step=1)
    with pytest.raises(KeyError, match="returned no 'accuracy'"):
        evaluator.run()


def test_a_checkpoint_pruned_before_evaluation_is_skipped(tmp_path):
    _write(tmp_path, 1)
    _write(tmp_path, 2)
    calls = []

    def evaluate(path):
        if path.endswith("-1"):
            checkpoints.remove_checkpoint(path)  # the trainer pruned it meanwhile
            tf.train.load_checkpoint(path)
        return _evaluate_fn(calls)(path)

    evaluator = evaluation.CheckpointEvaluator(str(tmp_path), evaluate, "accuracy", last_step=2,
                                               poll_seconds=0.01)
    assert evaluator.run()["best_step"] == 2
    assert calls == [2]


def test_script_defaults_and_new_flags():
    values = flags.FlagValues()
    training_flags.define_training_flags(
        train_batch_size=4096, eval_batch_size=64, learning_rate=0.00176, optimizer="lamb",
        save_checkpoints_steps=5000, do_train=True, do_eval=False, flag_values=values)
    training_flags.define_evaluation_flags(flag_values=values)
    values(["prog", "--output_dir=out", "--nodo_train", "--precision=mixed_bfloat16",
            "--gradient_accumulation_steps=4"])
    assert (values.train_batch_size, values.eval_batch_size, values.optimizer) == (4096, 64, "lamb")
    assert (values.keep_checkpoint_max, values.iterations_per_loop, values.num_tpu_cores) == (5, 1000, 8)
    assert values.do_train is False and values.use_tpu is False
    assert values.distribution_strategy == "auto" and values.eval_timeout_secs == 7200
    config = training_flags.training_config_from_flags(values, num_train_steps=10,
                                                       num_warmup_steps=2)
    assert (config.precision, config.gradient_accumulation_steps, config.num_train_steps) == (
        "mixed_bfloat16", 4, 10)
    with pytest.raises(flags.IllegalFlagValueError):
        values(["prog", "--output_dir=out", "--optimizer=sgd"])
    classifier = flags.FlagValues()
    training_flags.define_training_flags(train_batch_size=32, learning_rate=5e-5,
                                         optimizer="adamw", save_checkpoints_steps=1000,
                                         flag_values=classifier)
    classifier(["prog", "--output_dir=o"])
    assert classifier.optimizer == "adamw" and "do_train" not in classifier


def test_init_checkpoint_or_a_local_hub_module(tmp_path):
    values = flags.FlagValues()
    flags.DEFINE_string("init_checkpoint", None, "", flag_values=values)
    flags.DEFINE_string("albert_hub_module_handle", None, "", flag_values=values)
    values(["prog", "--init_checkpoint=ckpt/model.ckpt-best"])
    assert training_flags.init_checkpoint_from_flags(values) == "ckpt/model.ckpt-best"
    values.unparse_flags()
    values(["prog", f"--albert_hub_module_handle={tmp_path}"])
    assert training_flags.init_checkpoint_from_flags(values) == str(tmp_path)
    values.unparse_flags()
    values(["prog", "--albert_hub_module_handle=https://tfhub.dev/google/albert_base/3"])
    with pytest.raises(app.UsageError, match="nothing is downloaded"):
        training_flags.init_checkpoint_from_flags(values)
    values.unparse_flags()
    values(["prog", f"--albert_hub_module_handle={tmp_path}", "--init_checkpoint=x"])
    with pytest.raises(app.UsageError, match="not both"):
        training_flags.init_checkpoint_from_flags(values)


def test_strategy_choice(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert strategy_lib.resolve_strategy() is tf.distribute.get_strategy()
    one = strategy_lib.resolve_strategy("one_device")
    assert isinstance(one, tf.distribute.OneDeviceStrategy)
    assert strategy_lib.is_chief(one) and not strategy_lib.is_tpu(one)
    with pytest.raises(ValueError, match="--use_tpu conflicts with --distribution_strategy=mirrored"):
        strategy_lib.resolve_strategy("mirrored", use_tpu=True)
    with pytest.raises(ValueError, match="--distribution_strategy must be one of"):
        strategy_lib.resolve_strategy("horovod")
    with pytest.raises(ValueError, match="--cpu_replicas=2 .* conflicts with "
                                         "--distribution_strategy=one_device"):
        strategy_lib.resolve_strategy("one_device", cpu_replicas=2)
    with pytest.raises(ValueError, match="conflicts with --use_tpu"):
        strategy_lib.resolve_strategy(use_tpu=True, cpu_replicas=2)
    tf.constant(0)  # the runtime has started: the CPU can no longer be split
    with pytest.raises(ValueError, match="--cpu_replicas=2 must be applied before "
                                         "TensorFlow's runtime starts"):
        strategy_lib.resolve_strategy(cpu_replicas=2)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 0}}))
    assert strategy_lib._cluster_task_count() == 2
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        strategy_lib.resolve_strategy()


def test_on_checkpoint_sees_each_checkpoint_before_pruning(tmp_path):
    """The trainer calls `on_checkpoint(step, path)` after writing each checkpoint, while it
    is still on disk (keep_checkpoint_max=1 removes it at the next save)."""
    from albert_tf.training import checkpointing, loop
    from tests import training_toys
    seen = []

    def on_checkpoint(step, path):
        seen.append((step, path, tf.io.gfile.exists(path + ".index")))

    trainer = loop.Trainer(training_toys.ToyTask(), tf.distribute.get_strategy(),
                           training_toys._config(str(tmp_path), keep_checkpoint_max=1))
    trainer.train(on_checkpoint=on_checkpoint)
    assert seen == [(3, str(tmp_path / "model.ckpt-3"), True),
                    (6, str(tmp_path / "model.ckpt-6"), True)]
    assert [step for step, _ in evaluation.list_checkpoints(str(tmp_path))] == [6]
    assert type(trainer.checkpoints) is checkpointing.CheckpointManager  # left as built
