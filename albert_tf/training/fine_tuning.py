"""The fine-tuning flow every task shares, from a built job to its written outputs.

A task package (GLUE, RACE, tagging) provides a job: a `FineTuningJob` with its data, tokenizer
and model settings, `build_trainer`, `evaluate` (one checkpoint on the dev set) and `predict`
(the test set with model.ckpt-best). Its script defines `define_fine_tuning_flags` plus its own
flags, builds the job and calls `train_evaluate_predict`:

    job = glue_run.ClassifierJob(...)
    trainer, summary = fine_tuning.train_evaluate_predict(job, flag_values, strategy)

so checking the init checkpoint, locking the output directory, writing the config beside the
checkpoints, training while evaluating every checkpoint as it is saved, and predicting happen
the same way, with the same flags, for every task.
"""

from absl import logging

from albert_tf import checkpoints, errors
from albert_tf.files import output_lock
from albert_tf.training import evaluation
from albert_tf.training import flags as training_flags


def check_init_checkpoint(init_checkpoint, allow_random_init, do_train, output_dir,
                          error_class=errors.UserInputError):
    """Training must start from a checkpoint unless --allow_random_init says otherwise (or a
    checkpoint in `output_dir` resumes the run); a given --init_checkpoint must exist."""
    if init_checkpoint:
        checkpoints.resolve_checkpoint(init_checkpoint)  # fails now, naming the path
        return
    if do_train and not allow_random_init and checkpoints.latest_checkpoint(output_dir) is None:
        raise error_class(
            "--do_train without --init_checkpoint would fine-tune a randomly initialised "
            "model (a silent cause of failed reproductions). Pass --init_checkpoint (a "
            "checkpoint prefix or a directory) or, if you mean it, --allow_random_init")


class FineTuningJob:
    """The part of a task's job that is the same for every task.

    A subclass sets `output_dir` and `albert_config` and defines `build_trainer(strategy,
    training_config, do_train, do_eval)`, `evaluate(trainer, checkpoint_path, batch_size)`
    (metrics with `global_step`) and `predict(trainer, batch_size)` (the paths written).
    """

    error_class = errors.UserInputError  # the job's flag error; its messages name the flag
    dev_set_name = "dev set"

    def check_init_checkpoint(self, init_checkpoint, allow_random_init, do_train):
        check_init_checkpoint(init_checkpoint, allow_random_init, do_train, self.output_dir,
                              self.error_class)

    def best_checkpoint(self):
        """`output_dir/model.ckpt-best` (chosen by --do_eval), else the latest (warned)."""
        return evaluation.best_or_latest_checkpoint(self.output_dir, self.error_class,
                                                    self.dev_set_name)

    def train_and_evaluate(self, trainer, do_train, do_eval, eval_batch_size,
                           eval_timeout_secs=7200.0, poll_seconds=5.0):
        """Trains (--do_train) and/or evaluates every checkpoint (--do_eval); returns the
        evaluator's summary ({best_step, best_value, last_evaluated}) or None."""
        return evaluation.train_and_evaluate(
            trainer, self.output_dir, lambda path: self.evaluate(trainer, path, eval_batch_size),
            do_train, do_eval, eval_timeout_secs, poll_seconds)


def train_evaluate_predict(job, flag_values, strategy):
    """Runs --do_train, --do_eval and --do_predict for `job` as the fine-tuning flags say;
    returns (trainer, the best dev result summary or None)."""
    init_checkpoint = training_flags.init_checkpoint_from_flags(flag_values)
    job.check_init_checkpoint(init_checkpoint, flag_values.allow_random_init, flag_values.do_train)
    if flag_values.do_train or flag_values.do_eval or flag_values.do_predict:
        output_lock.check_writable(flag_values.output_dir, "--output_dir")
    if flag_values.do_train:
        job.albert_config.write_beside(flag_values.output_dir)
    config = training_flags.training_config_from_flags(
        flag_values, num_train_steps=flag_values.train_step,
        num_warmup_steps=flag_values.warmup_step, init_checkpoint=init_checkpoint)
    trainer = job.build_trainer(strategy, config, flag_values.do_train, flag_values.do_eval)
    summary = None
    if flag_values.do_train or flag_values.do_eval:
        summary = job.train_and_evaluate(trainer, flag_values.do_train, flag_values.do_eval,
                                         flag_values.eval_batch_size,
                                         flag_values.eval_timeout_secs)
        if summary:
            logging.info("Best %s = %s at step %s", trainer.task.eval_metric_name,
                         summary["best_value"], summary["best_step"])
    if flag_values.do_predict:
        for path in job.predict(trainer, flag_values.predict_batch_size):
            logging.info("Wrote %s", path)
    return trainer, summary
