"""The fine-tuning flow every task shares, from a built job to its written outputs.

A task package (GLUE, RACE, tagging, SQuAD) provides a job: a `FineTuningJob` whose
`__init__` runs the shared checks and sets up the tokenizer. Before any training the job's
`plan` computes everything the run needs (it writes the records the task reads, and says the
steps, the warm-up and the last step to evaluate) and returns it as one `RunPlan`; the job's
`build_task` makes its `Task` from the plan, and `predict` writes the test set's predictions
with the best checkpoint and returns them. Evaluating a checkpoint is the same for every job:
the task's `aggregate_logs` / `reduce_aggregated_logs` over its evaluation set. The script turns
its flags into `FlowOptions` and a `loop.TrainingConfig` (`training.flags`) and calls
`train_evaluate_predict`:

    job = glue_run.ClassifierJob(...)
    outcome = fine_tuning.train_evaluate_predict(job, options, config, strategy)
    outcome.summary, outcome.test_results

so checking the init checkpoint, locking the output directory, writing the config beside the
checkpoints, training while evaluating every checkpoint as it is saved (the trainer's
`on_checkpoint` hook), and predicting happen the same way for every task. The flow never reads
a flag, and no job carries state from one hook to the next: what differs (SQuAD's steps from
epochs, its last step without a train file) is in the plan.
"""

import abc
import dataclasses
import os
import shutil

from absl import logging
import tensorflow as tf

from albert_tf import checkpoints, errors
from albert_tf.files import output_lock
from albert_tf.text import tokenization
from albert_tf.training import evaluation, length_buckets, loop, prediction


@dataclasses.dataclass
class FlowOptions:
    """What `train_evaluate_predict` runs, by meaning; scripts fill it from their flags."""

    output_dir: str
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    init_checkpoint: str = None
    allow_random_init: bool = False
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    eval_timeout_secs: float = 7200.0


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What a run does, computed once by the job before training (`FineTuningJob.plan`).

    `training_config`: the `loop.TrainingConfig` the trainer runs (steps, warm-up);
    `task_inputs`: what the job's `build_task` takes (the records `plan` wrote);
    `last_step`: the step whose evaluation ends the evaluate-every-checkpoint loop (None:
    evaluating alone has nothing to wait for); `predict_fallback`: what to predict with when
    the output directory holds no checkpoint (SQuAD's --init_checkpoint).
    """

    training_config: object
    task_inputs: dict
    last_step: int = None
    predict_fallback: str = None


@dataclasses.dataclass(frozen=True)
class FlowResult:
    """What `train_evaluate_predict` returns: the trainer, the best dev result summary (or
    None) and the test set's results as `predict` returned them (or None)."""

    trainer: object
    summary: dict = None
    test_results: dict = None


def check_init_checkpoint(init_checkpoint, allow_random_init, do_train, output_dir):
    """Training must start from a checkpoint unless --allow_random_init says otherwise (or a
    checkpoint in `output_dir` resumes the run); a given --init_checkpoint must exist."""
    if init_checkpoint:
        checkpoints.resolve_checkpoint(init_checkpoint)  # fails now, naming the path
        return
    if do_train and not allow_random_init and checkpoints.latest_checkpoint(output_dir) is None:
        raise errors.UserInputError(
            "--do_train without --init_checkpoint would fine-tune a randomly initialised "
            "model (a silent cause of failed reproductions). Pass --init_checkpoint (a "
            "checkpoint prefix or a directory) or, if you mean it, --allow_random_init")


def best_checkpoint(output_dir, fallback=None, eval_split="dev set"):
    """`output_dir/model.ckpt-best` (chosen by evaluation), else the latest checkpoint (warned),
    else `fallback` (an --init_checkpoint, if given); raises when there is none of them."""
    best = os.path.join(output_dir, checkpoints.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + checkpoints.INDEX_SUFFIX):
        return best
    latest = checkpoints.latest_checkpoint(output_dir)
    if latest is None and fallback:
        logging.warning("%s has no checkpoint: using %s", output_dir, fallback)
        return fallback
    if latest is None:
        raise errors.UserInputError(
            f"{output_dir}: no model.ckpt-best and no checkpoint (no model.ckpt-<step> in "
            f"{output_dir} and no --init_checkpoint to predict with); run --do_train (and "
            f"--do_eval, which chooses model.ckpt-best on the {eval_split}) with this "
            "--output_dir first")
    logging.warning("%s has no model.ckpt-best (run --do_eval to choose one on the %s); "
                    "using the latest checkpoint %s", output_dir, eval_split, latest)
    return latest


def remove_new_output_dir(output_dir):
    """Removes `output_dir`, which this run created, after its input was refused: the folder
    holds only what the run itself wrote (the record caches of the splits read so far)."""
    if "://" not in output_dir and os.path.isdir(output_dir):
        shutil.rmtree(output_dir)


class FineTuningJob(abc.ABC):
    """The part of a task's job that is the same for every task (see the module docstring)."""

    dev_set_name = "dev set"
    eval_poll_seconds = 5.0  # how often evaluating alone looks for a new checkpoint

    def __init__(self, output_dir, albert_config, max_seq_length, spm_model_file=None,
                 vocab_file=None, do_lower_case=True, batching=length_buckets.PADDED,
                 config_source="--albert_config_file"):
        """Checks the sequence length against the config and sets up the tokenizer
        (SentencePiece with `spm_model_file`, else WordPiece), checking its size against
        `vocab_size`; `batching`: the run's `length_buckets.Batching`."""
        albert_config.check_max_seq_length(max_seq_length, config_source)
        if not spm_model_file and not vocab_file:
            raise errors.UserInputError("give --spm_model_file (SentencePiece, the released "
                                        "models) or --vocab_file (WordPiece)")
        self.output_dir = output_dir
        self.albert_config = albert_config
        self.max_seq_length = max_seq_length
        self.spm_model_file, self.vocab_file = spm_model_file, vocab_file
        self.vocabulary = spm_model_file or vocab_file
        self.do_lower_case = do_lower_case
        self.batching = batching
        self.tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case, spm_model_file)
        albert_config.check_vocabulary(len(self.tokenizer.vocab), self.vocabulary,
                                       config_source)

    def plan(self, options, training_config):
        """The `RunPlan` of a run as `options` (`FlowOptions`) say: the records it needs written
        now (so a bad file fails before training), `training_config` as given."""
        return RunPlan(training_config, self.write_records(options.do_train, options.do_eval,
                                                           options.do_predict),
                       last_step=training_config.num_train_steps)

    def write_records(self, do_train, do_eval, do_predict):
        """The task's inputs (`build_task`'s keyword arguments) with the records `do_train` /
        `do_eval` / `do_predict` need, written if missing."""
        raise NotImplementedError(f"{type(self).__name__} defines plan or write_records")

    @abc.abstractmethod
    def build_task(self, task_inputs):
        """The job's `Task` reading `task_inputs` (a plan's)."""

    def build_trainer(self, strategy, plan):
        """A `loop.Trainer` of the job's task as `plan` says."""
        return loop.Trainer(self.build_task(plan.task_inputs), strategy, plan.training_config)

    @abc.abstractmethod
    def predict(self, trainer, checkpoint_path, batch_size):
        """Predicts the job's test set (`task.predict_dataset`) with `checkpoint_path`; returns
        (the paths written, the test results or None)."""

    def check_init_checkpoint(self, init_checkpoint, allow_random_init, do_train):
        check_init_checkpoint(init_checkpoint, allow_random_init, do_train, self.output_dir)

    def best_checkpoint(self, fallback=None):
        """`output_dir/model.ckpt-best`, else the latest checkpoint (warned), else `fallback`."""
        return best_checkpoint(self.output_dir, fallback, self.dev_set_name)

    @staticmethod
    def run_whole_set(trainer, checkpoint_path, dataset, what):
        """Restores `checkpoint_path` and runs the one whole-set pass over `dataset`; returns
        (the checkpoint's global_step, the task's aggregated state)."""
        step = trainer.checkpoints.restore_model(checkpoint_path)
        return step, prediction.aggregate(trainer.task, trainer.model, dataset, trainer.strategy,
                                          what)

    def score(self, trainer, checkpoint_path, dataset, what):
        """(the task's whole-set metrics of a checkpoint on `dataset` plus `global_step`, the
        aggregated state the task's prediction files are written from)."""
        step, state = self.run_whole_set(trainer, checkpoint_path, dataset, what)
        return dict(trainer.task.reduce_aggregated_logs(state), global_step=step), state

    def evaluate(self, trainer, checkpoint_path, batch_size):
        """The task's whole-set metrics of one checkpoint on its evaluation set, plus
        `global_step`; written to the TensorBoard eval summaries."""
        results, _ = self.score(trainer, checkpoint_path, trainer.task.eval_dataset(None, batch_size),
                                f"Evaluating {checkpoint_path}")
        trainer.write_eval_summaries({name: value for name, value in results.items()
                                      if not isinstance(value, str)})  # SQuAD's notes
        return results


def train_evaluate_predict(job, options, training_config, strategy):
    """Runs training, evaluation and prediction for `job` as `options` (`FlowOptions`) say;
    returns a `FlowResult`."""
    job.check_init_checkpoint(options.init_checkpoint, options.allow_random_init,
                              options.do_train)
    new_output_dir = not tf.io.gfile.exists(options.output_dir)
    if options.do_train:
        job.albert_config.check_beside(options.output_dir)  # another model's run: refused first
    if options.do_train or options.do_eval or options.do_predict:
        output_lock.check_writable(options.output_dir, "--output_dir")
    try:
        plan = job.plan(options, training_config)
    except errors.UserInputError:
        if new_output_dir:  # a refused run leaves no folder behind (only its record caches were in it)
            remove_new_output_dir(options.output_dir)
        raise
    if options.do_train:
        job.albert_config.write_beside(options.output_dir)
    trainer = job.build_trainer(strategy, plan)
    summary = test_results = None
    if options.do_train or options.do_eval:
        summary = evaluation.train_and_evaluate(
            trainer, lambda path: job.evaluate(trainer, path, options.eval_batch_size),
            options.do_train, options.do_eval, plan.last_step, options.eval_timeout_secs,
            job.eval_poll_seconds)
        if summary:
            logging.info("Best %s = %s at step %s", trainer.task.eval_metric_name,
                         summary["best_value"], summary["best_step"])
    if options.do_predict:
        paths, test_results = job.predict(trainer, job.best_checkpoint(plan.predict_fallback),
                                          options.predict_batch_size)
        for path in paths:
            logging.info("Wrote %s", path)
    return FlowResult(trainer, summary, test_results)
