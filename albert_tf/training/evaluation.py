"""The evaluate-every-checkpoint loop (the original run_classifier / run_pretraining eval).

    evaluator = evaluation.CheckpointEvaluator(
        output_dir, evaluate_fn=lambda path: {...metrics...}, metric_name="eval_accuracy",
        last_step=num_train_steps)
    best = evaluator.run()

It polls `output_dir` for `model.ckpt-<step>`, evaluates each new one in step order, appends
`key = value` lines (sorted, as the original) to `eval_results.txt`, copies the best
checkpoint's files to `model.ckpt-best.*` and rewrites `best_trial.txt`
(`last_evaluated_step:best_step:best_value`, the original classifier's format) after every
evaluation, so a restarted evaluator continues where it stopped. Unlike the original (which
could poll forever), it ends when the checkpoint at `last_step` has been evaluated or when
no new checkpoint appeared for `timeout_seconds`.
"""

import math
import os
import time

from absl import logging
import tensorflow as tf

from albert_tf import checkpoints, errors
from albert_tf.files import io_utils, output_lock
from albert_tf.training import checkpointing

BEST_NAME = checkpoints.BEST_CHECKPOINT_NAME


def write_results(path, results, notes=(), append=False):
    """The one writer of `key = value` results files (`eval_results.txt`, a task's test
    results): the results sorted by key, as the original, then the `notes` lines; appended, or
    written atomically. Returns the lines."""
    lines = [f"{key} = {results[key]}" for key in sorted(results)] + list(notes)
    write = io_utils.append_text if append else io_utils.atomic_write_text
    write(path, "\n".join(lines) + "\n")
    return lines


def list_checkpoints(directory):
    """`[(step, prefix)]` of the `model.ckpt-<step>` checkpoints in `directory`, by step."""
    found = []
    for index in tf.io.gfile.glob(os.path.join(directory, "model.ckpt-*.index")):
        prefix = index[:-len(".index")]
        step = checkpointing.checkpoint_step(prefix)
        if step is not None:
            found.append((step, prefix))
    return sorted(found)


class CheckpointEvaluator:
    """Evaluates each new checkpoint, tracks the best by one metric, stops at `last_step`."""

    def __init__(self, directory, evaluate_fn, metric_name, higher_is_better=True,
                 last_step=None, only_latest=False, poll_seconds=1.0, timeout_seconds=3600.0,
                 results_file="eval_results.txt", state_file="best_trial.txt"):
        """`only_latest`: evaluate just the newest checkpoint at each poll (run_pretraining's
        original behaviour) instead of every checkpoint in turn (run_classifier's)."""
        self.directory = directory
        self.evaluate_fn = evaluate_fn
        self.metric_name = metric_name
        self.higher_is_better = higher_is_better
        self.last_step = last_step
        self.only_latest = only_latest
        self.poll_seconds = poll_seconds
        self.timeout_seconds = timeout_seconds
        self.results_path = os.path.join(directory, results_file)
        self.state_path = os.path.join(directory, state_file)
        self.last_evaluated, self.best_step, self.best_value = self._read_state()

    def _read_state(self):
        if not tf.io.gfile.exists(self.state_path):
            return -1, -1, None
        with tf.io.gfile.GFile(self.state_path) as reader:
            text = reader.read().strip()
        parts = text.split(":")
        if len(parts) != 3:
            raise errors.UserInputError(f"{self.state_path}: expected 'last_step:best_step:best_value', "
                             f"got {text!r}")
        try:
            last, best_step, best_value = int(parts[0]), int(parts[1]), float(parts[2])
        except ValueError as error:
            raise errors.UserInputError(f"{self.state_path}: {error} in {text!r}") from error
        return last, best_step, (None if best_step < 0 else best_value)

    def _write_state(self):
        value = -1 if self.best_value is None else self.best_value
        io_utils.atomic_write_text(self.state_path,
                                   f"{self.last_evaluated}:{self.best_step}:{value}\n")

    def _improves(self, value):
        """A NaN or infinite metric (diverged training) is the worst: never model.ckpt-best."""
        if not math.isfinite(value):
            logging.warning("%s = %s is not a finite number; the checkpoint is not a candidate "
                            "for %s (did training diverge?)", self.metric_name, value, BEST_NAME)
            return False
        if self.best_value is None or not math.isfinite(self.best_value):
            return True
        return value > self.best_value if self.higher_is_better else value < self.best_value

    def _pending(self):
        pending = [(s, p) for s, p in list_checkpoints(self.directory) if s > self.last_evaluated]
        return pending[-1:] if self.only_latest else pending

    def _finished(self):
        return self.last_step is not None and self.last_evaluated >= self.last_step

    def evaluate_if_new(self, step, prefix):
        """Evaluates the checkpoint unless a step at or after it was evaluated already (the
        trainer's `on_checkpoint` hook)."""
        if step > self.last_evaluated:
            self.evaluate_checkpoint(step, prefix)

    def evaluate_checkpoint(self, step, prefix):
        with output_lock.hold(self.directory, "eval"):
            return self._evaluate_checkpoint(step, prefix)

    def _evaluate_checkpoint(self, step, prefix):
        results = dict(self.evaluate_fn(prefix))
        results.setdefault("global_step", step)
        if self.metric_name not in results:
            raise KeyError(f"evaluation of {prefix} returned no {self.metric_name!r} "
                           f"(got {sorted(results)})")
        value = float(results[self.metric_name])
        if self._improves(value):
            best = os.path.join(self.directory, BEST_NAME)
            checkpoints.remove_checkpoint(best)  # never pair the old index with new data
            checkpoints.copy_checkpoint(prefix, best)
            self.best_step, self.best_value = step, value
            logging.info("New best %s = %.6g at step %d, copied to %s", self.metric_name, value,
                         step, BEST_NAME)
        lines = write_results(self.results_path, results, append=True, notes=[
            f"best_{self.metric_name} = {self.best_value}", f"best_global_step = {self.best_step}"])
        self.last_evaluated = step
        self._write_state()
        logging.info("Eval of %s: %s", prefix, ", ".join(lines))
        return results

    def run(self):
        """Polls and evaluates until `last_step` is done or `timeout_seconds` pass idle.

        Returns `{"best_step", "best_value", "last_evaluated"}`. Holds the directory's `eval`
        lock: a second evaluator writing the same results is refused.
        """
        with output_lock.hold(self.directory, "eval"):
            return self._run()

    def _run(self):
        idle_since = time.time()
        while not self._finished():
            pending = self._pending()
            for step, prefix in pending:
                try:
                    self.evaluate_checkpoint(step, prefix)
                except tf.errors.NotFoundError as error:
                    if tf.io.gfile.exists(prefix + ".index"):
                        raise
                    # The trainer's keep_checkpoint_max removed it before we got to it.
                    logging.warning("Skipping %s, deleted while waiting: %s", prefix, error)
                    self.last_evaluated = max(self.last_evaluated, step)
                    self._write_state()
            if pending:
                idle_since = time.time()
                continue
            if time.time() - idle_since > self.timeout_seconds:
                logging.warning("No new checkpoint in %s for %.0f s (last evaluated step %d, "
                                "waiting for %s); stopping", self.directory,
                                self.timeout_seconds, self.last_evaluated, self.last_step)
                break
            time.sleep(self.poll_seconds)
        return {"best_step": self.best_step, "best_value": self.best_value,
                "last_evaluated": self.last_evaluated}


def train_and_evaluate(trainer, evaluate_fn, do_train, do_eval, last_step,
                       eval_timeout_secs=7200.0, poll_seconds=5.0, only_latest=False):
    """The one train-and-evaluate of every script: trains (`do_train`) and/or evaluates the
    checkpoints of the trainer's output directory (`do_eval`) with `evaluate_fn(path)` → results,
    keeping the best by the task's metric, up to the checkpoint at `last_step`.

    When both run in one process, each checkpoint is evaluated as soon as it is saved, before
    pruning (those an interrupted run left first); `only_latest` (pretraining's original)
    evaluates only the newest after training. Evaluating alone with `last_step` None has nothing
    to wait for and evaluates nothing. Returns the evaluator's summary or None."""
    if do_eval and last_step is None and not do_train:
        return None
    evaluator = None
    if do_eval:
        evaluator = CheckpointEvaluator(
            trainer.config.output_dir, evaluate_fn, trainer.task.eval_metric_name,
            higher_is_better=trainer.task.eval_metric_higher_is_better, last_step=last_step,
            only_latest=only_latest, poll_seconds=poll_seconds, timeout_seconds=eval_timeout_secs)
    if do_train:
        if evaluator is None or only_latest:
            trainer.train()
        else:
            for step, prefix in list_checkpoints(trainer.config.output_dir):  # an interrupted run's
                evaluator.evaluate_if_new(step, prefix)
            trainer.train(on_checkpoint=evaluator.evaluate_if_new)
    return evaluator.run() if evaluator is not None else None
