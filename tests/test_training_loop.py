"""The shared training loop on a toy task: checkpoints, resume, accumulation, NaN stop, summaries."""

import glob
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.training import checkpointing, loop
from tests import training_toys


@pytest.fixture(autouse=True)
def _no_global_seed():
    """A script's --seed earlier in the session sets TensorFlow's global seed; these toy runs
    rely on their op-level seeds alone (the batch order of `shuffle(seed=1)`)."""
    tf.random.set_seed(None)


def _config(output_dir, **overrides):
    return training_toys._config(str(output_dir), **overrides)


def _trainer(output_dir, task=None, **overrides):
    return loop.Trainer(task or training_toys.ToyTask(), tf.distribute.get_strategy(),
                        _config(output_dir, **overrides))


def test_trains_and_saves_the_original_layout_keeping_the_newest(tmp_path):
    trainer = _trainer(tmp_path, num_train_steps=60, save_checkpoints_steps=20,
                       iterations_per_loop=7, keep_checkpoint_max=2)
    scalars = trainer.train()
    assert trainer.global_step == 60
    assert scalars["accuracy"] > 0.9 and scalars["loss"] < 0.45  # chance: accuracy 0.5, loss ln 2
    assert {"learning_rate", "examples_per_second", "steps_per_second"} <= set(scalars)
    kept = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "model.ckpt-*.index")))
    assert kept == ["model.ckpt-40.index", "model.ckpt-60.index"]
    assert (tmp_path / "checkpoint").read_text().splitlines() == [
        'model_checkpoint_path: "model.ckpt-60"', 'all_model_checkpoint_paths: "model.ckpt-40"',
        'all_model_checkpoint_paths: "model.ckpt-60"']
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-60"))
    model_names = ["toy/dense/kernel", "toy/dense/bias", "output_weights", "output_bias"]
    expected = set(model_names) | {"global_step"} | {
        f"{n}/{s}" for n in model_names for s in ("adam_m", "adam_v")}
    assert set(stored) == expected
    assert stored["global_step"].dtype == np.int64 and int(stored["global_step"]) == 60
    for name, variable in trainer.variables_by_name.items():
        np.testing.assert_array_equal(stored[name], variable.numpy())
    for name, slot in trainer.optimizer.slot_variables().items():
        np.testing.assert_array_equal(stored[name], slot.numpy())
    assert not glob.glob(str(tmp_path / ".*tmp*"))


def test_resumes_from_the_latest_checkpoint_with_step_lr_and_slots(tmp_path):
    first = _trainer(tmp_path, num_train_steps=40, num_warmup_steps=5, save_checkpoints_steps=20,
                     iterations_per_loop=20)
    first.train()
    # Pretend the run died after step 20: the state file names model.ckpt-20 again.
    checkpoints.remove_checkpoint(str(tmp_path / "model.ckpt-40"))
    checkpoints.write_checkpoint_state(str(tmp_path), "model.ckpt-20")
    second = _trainer(tmp_path, num_train_steps=40, num_warmup_steps=5, save_checkpoints_steps=20,
                      iterations_per_loop=20)
    assert second.global_step == 0
    assert second.restore_or_initialize() == 20
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-20"))
    assert second.learning_rate == pytest.approx(0.01 * (1 - 20 / 40))
    for name, slot in second.optimizer.slot_variables().items():
        np.testing.assert_array_equal(slot.numpy(), stored[name])
        assert np.any(slot.numpy() != 0)
    for name, variable in second.variables_by_name.items():
        np.testing.assert_array_equal(variable.numpy(), stored[name])
    second.train()
    assert second.global_step == 40
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-40")


def test_gradient_accumulation_equals_one_big_batch(tmp_path):
    results = {}
    for k in (1, 4):
        trainer = _trainer(tmp_path / f"k{k}", training_toys.ToyTask(shuffle=False),
                           num_train_steps=3, train_batch_size=16, gradient_accumulation_steps=k,
                           save_checkpoints_steps=3)
        trainer.train()
        results[k] = {**{n: v.numpy() for n, v in trainer.variables_by_name.items()},
                      **{n: v.numpy() for n, v in trainer.optimizer.slot_variables().items()}}
    untouched = training_toys.ToyModel().checkpoint_variables()
    assert np.abs(results[1]["toy/dense/kernel"] - untouched["toy/dense/kernel"].numpy()).max() > 1e-3
    for name in results[1]:
        np.testing.assert_allclose(results[4][name], results[1][name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("precision", ["float32", "mixed_float16"])
def test_accumulation_leaves_a_variable_without_gradient_alone(tmp_path, precision):
    """SQuAD's and tagging's heads never read the pooler: with accumulation the step used to
    add None to the running sum and crash; now it trains as k = 1 does, the pooler untouched."""
    results = {}
    for k in (1, 4):
        trainer = _trainer(tmp_path / f"k{k}", training_toys.ToyTask(shuffle=False, unused_pooler=True),
                           num_train_steps=3, train_batch_size=16, gradient_accumulation_steps=k,
                           save_checkpoints_steps=3, precision=precision)
        trainer.train()
        results[k] = {n: v.numpy() for n, v in trainer.variables_by_name.items()}
    untouched = training_toys.ToyModel(unused_pooler=True).checkpoint_variables()
    for name in ("toy/pooler/kernel", "toy/pooler/bias"):
        np.testing.assert_array_equal(results[4][name], untouched[name].numpy(), err_msg=name)
    assert np.abs(results[4]["toy/dense/kernel"] - untouched["toy/dense/kernel"].numpy()).max() > 1e-3
    tolerance = {"rtol": 1e-4, "atol": 1e-6} if precision == "float32" else {"rtol": 0, "atol": 1e-3}
    for name in results[1]:  # float16 micro-batch sums round differently from one big batch
        np.testing.assert_allclose(results[4][name], results[1][name], err_msg=name, **tolerance)


def test_accumulation_needs_divisible_batch(tmp_path):
    with pytest.raises(ValueError, match=r"--train_batch_size=10 must be divisible .* = 4"):
        _trainer(tmp_path, train_batch_size=10, gradient_accumulation_steps=4)
    with pytest.raises(ValueError, match="--precision must be one of"):
        _trainer(tmp_path, precision="float64")


def test_non_finite_loss_stops_naming_the_step_and_keeps_the_last_checkpoint(tmp_path):
    # Batches of 16 without shuffling: examples from 400 on are NaN, so step 25 (0-based) fails.
    task = training_toys.ToyTask(shuffle=False, nan_from=400)
    trainer = _trainer(tmp_path, task, num_train_steps=60, save_checkpoints_steps=10,
                       iterations_per_loop=10)
    with pytest.raises(loop.NonFiniteLossError,
                       match=r"loss became nan at global_step 25 .*model\.ckpt-20"):
        trainer.train()
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-20")
    assert not glob.glob(str(tmp_path / "model.ckpt-30*"))
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-20"))
    assert all(np.all(np.isfinite(value)) for value in stored.values())


def test_progress_scalars_are_tensorboard_summaries(tmp_path):
    trainer = _trainer(tmp_path, num_train_steps=6, iterations_per_loop=3)
    trainer.train()
    events = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert len(events) == 1
    seen = {}
    for event in tf.compat.v1.train.summary_iterator(events[0]):
        for value in event.summary.value:
            assert value.metadata.plugin_data.plugin_name == "scalars"
            seen.setdefault(value.tag, []).append(
                (event.step, float(tf.make_ndarray(value.tensor))))
    assert {"loss", "accuracy", "learning_rate", "examples_per_second"} <= set(seen)
    assert [step for step, _ in seen["loss"]] == [3, 6]
    assert seen["learning_rate"][-1][1] == pytest.approx(0.0)  # lr at step 6 of 6


def test_evaluate_reports_loop_metrics_and_global_step(tmp_path):
    trainer = _trainer(tmp_path, num_train_steps=30, save_checkpoints_steps=30)
    trainer.train()
    results = trainer.evaluate(batch_size=100, max_steps=4)
    examples = training_toys.toy_examples()
    logits = trainer.model({"x": tf.constant(examples["x"][:400])})["logits"].numpy()
    assert results["accuracy"] == pytest.approx(np.mean(logits.argmax(-1) == examples["y"][:400]))
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(examples["y"][:400], logits).numpy()
    assert results["loss"] == pytest.approx(losses.mean(), rel=1e-5)
    assert results["global_step"] == 30


def test_warm_start_by_name_with_missing_head(tmp_path):
    source = {"toy/dense/kernel": np.full((4, 16), 0.5, np.float32),
              "toy/dense/bias": np.full((16,), -0.25, np.float32)}
    checkpoints.write_checkpoint(str(tmp_path / "init" / "model.ckpt-7"), source)
    trainer = _trainer(tmp_path / "run", init_checkpoint=str(tmp_path / "init" / "model.ckpt-7"))
    assert trainer.restore_or_initialize() == 0
    np.testing.assert_array_equal(trainer.variables_by_name["toy/dense/kernel"].numpy(), 0.5)
    np.testing.assert_array_equal(trainer.variables_by_name["toy/dense/bias"].numpy(), -0.25)
    # A restart resumes from its own checkpoint, not from --init_checkpoint again.
    trainer.train()
    again = _trainer(tmp_path / "run", init_checkpoint=str(tmp_path / "init" / "model.ckpt-7"))
    assert again.restore_or_initialize() == 6
    assert np.any(again.variables_by_name["toy/dense/kernel"].numpy() != 0.5)


def test_restore_refuses_a_checkpoint_without_global_step(tmp_path):
    trainer = _trainer(tmp_path)
    checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-3"),
                                 {n: v.numpy() for n, v in trainer.variables_by_name.items()})
    with pytest.raises(ValueError, match="no global_step; not a training checkpoint"):
        trainer.checkpoints.restore(str(tmp_path / "model.ckpt-3"))
    assert checkpointing.checkpoint_step(str(tmp_path / "model.ckpt-3")) == 3
    assert checkpointing.checkpoint_step("model.ckpt-best") is None


def test_eta_is_measured_after_the_first_loop_which_includes_tracing(tmp_path, caplog, monkeypatch):
    """The first loop traces the step function (seconds on a CPU, for a few steps): its line
    says `ETA ?`, and the later lines' rate leaves it out. A 2 s stall in the first loop,
    standing in for tracing, would make the next ETA about 2 s; it stays near the toy's true
    time (milliseconds)."""
    import time
    import logging as std_logging
    trainer = _trainer(tmp_path, num_train_steps=9, save_checkpoints_steps=9, iterations_per_loop=3)
    train_steps, calls = trainer.train_steps, []

    def first_loop_stalls(iterator, num_steps):
        calls.append(num_steps)
        if len(calls) == 1:
            time.sleep(2.0)
        return train_steps(iterator, num_steps)

    monkeypatch.setattr(trainer, "train_steps", first_loop_stalls)
    caplog.set_level(std_logging.INFO, logger="absl")  # whatever verbosity an earlier test left
    trainer.train()
    etas = [message.rsplit("ETA ", 1)[1] for message in caplog.messages
            if message.startswith("step ") and "ETA" in message]
    assert etas[0] == "?" and etas[-1] == "0:00:00", etas
    assert etas[1] in ("0:00:00", "0:00:01"), etas


@pytest.mark.parametrize("enable_xla", [False, True])
def test_autograph_rewrites_only_the_step_loop_not_the_model_loss_or_optimizer(
        tmp_path, caplog, enable_xla):
    """Rewriting the model's, loss's and optimizer's source cost 2-3 s of each process's first
    step. At verbosity 3 AutoGraph logs each call of a rewritten function ("Calling <function
    ...tf__<name>"), whether it was rewritten now or earlier in this process."""
    task = training_toys.ToyTask()
    trainer = _trainer(tmp_path, task=task, num_train_steps=3, enable_xla=enable_xla)
    tf.autograph.set_verbosity(3)
    try:
        with caplog.at_level("INFO"):
            trainer.train()
            trainer.evaluate(batch_size=16, max_steps=2)
    finally:
        tf.autograph.set_verbosity(0)
    rewritten = set()
    for record in caplog.records:
        match = re.match(r"Calling <function .*\.tf__(\w+) at ", record.getMessage())
        if match:
            rewritten.add(match.group(1))
    assert "_train_loop" in rewritten and "_train_step" in rewritten, rewritten
    assert not rewritten & {"call", "per_example_loss", "compute_loss", "_micro_batch_gradients",
                            "_eval_step", "replica_fn", "apply", "update_step"}, rewritten
