"""What `run_squad.py` does, for v1.1 and v2.0: prepare features, train, evaluate checkpoints.

Fixes of the original's bugs:
- predict-only runs need no `--train_file` (v1 crashed on `int < None`; v2 read the train
  file just to count steps);
- the feature-file flags are optional (the original failed on `tf.gfile.Exists(None)`);
- evaluation never polls forever: it stops at the last training step (known from
  `--train_file` and the flags), or, without a train file, after the checkpoints already in
  `--output_dir`, or after `--eval_timeout_secs` without a new checkpoint.
Every checkpoint is scored (key `f1`); the best is copied to `model.ckpt-best`; results are
appended to `eval_results.txt`; at the end the best checkpoint predicts once more, so the
prediction files in `--output_dir` are the best checkpoint's.
"""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from albert_tf import checkpoints, errors
from albert_tf.files import io_utils
from albert_tf.text import tokenization
from albert_tf.config import AlbertConfig
from albert_tf.squad import data, prediction
from albert_tf.squad import task as squad_task
from albert_tf.training import evaluation, fine_tuning, loop


@dataclasses.dataclass
class SquadRun:
    """Everything `run_squad.py` takes, by flag name (see run_squad.py for the meanings)."""

    albert_config_file: str
    spm_model_file: str
    output_dir: str
    version_2_with_negative: bool = False
    train_file: str = None
    predict_file: str = None
    threshold_predict_file: str = None
    null_score_diff_threshold: float = None
    train_feature_file: str = None
    predict_feature_file: str = None
    predict_feature_left_file: str = None
    do_lower_case: bool = True
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    n_best_size: int = 20
    max_answer_length: int = 30
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1
    use_einsum: bool = True
    init_checkpoint: str = None
    allow_random_init: bool = False
    eval_timeout_secs: float = 7200.0
    length_buckets: str = "auto"

    def validate(self, albert_config):
        if not (self.do_train or self.do_predict):
            raise errors.UserInputError("At least one of --do_train, --do_predict (or --export_dir) "
                             "must be given")
        if self.do_train and not self.train_file:
            raise errors.UserInputError("--do_train needs --train_file")
        fine_tuning.check_init_checkpoint(self.init_checkpoint, self.allow_random_init,
                                          self.do_train, self.output_dir)
        if self.do_predict and not self.predict_file:
            raise errors.UserInputError("--do_predict needs --predict_file")
        if self.max_seq_length > albert_config.max_position_embeddings:
            raise errors.UserInputError(
                f"--max_seq_length={self.max_seq_length} exceeds max_position_embeddings="
                f"{albert_config.max_position_embeddings} of {self.albert_config_file}")
        if self.max_seq_length <= self.max_query_length + 3:
            raise errors.UserInputError(f"--max_seq_length ({self.max_seq_length}) must be greater than "
                             f"--max_query_length ({self.max_query_length}) + 3")
        for name in ("doc_stride", "n_best_size", "max_answer_length", "predict_batch_size"):
            if getattr(self, name) <= 0:
                raise errors.UserInputError(f"--{name} must be > 0, got {getattr(self, name)}")
        if self.version_2_with_negative:
            if self.start_n_top > self.max_seq_length or self.end_n_top > self.max_seq_length:
                raise errors.UserInputError("--start_n_top and --end_n_top must be ≤ --max_seq_length")
        elif self.threshold_predict_file or self.null_score_diff_threshold is not None:
            raise errors.UserInputError("--threshold_predict_file / --null_score_diff_threshold apply "
                             "only with --version_2_with_negative")

    @property
    def feature_options(self):
        return data.FeatureOptions(self.max_seq_length, self.doc_stride, self.max_query_length,
                                   self.do_lower_case)


def num_train_steps(num_examples, train_batch_size, num_train_epochs):
    """The original: int(#examples / batch × epochs), counted over examples, not windows."""
    return int(num_examples / train_batch_size * num_train_epochs)


def keep_padding(options):
    """Why the run's model needs batches padded to max_seq_length (v1.1), or None (v2)."""
    return None if options.version_2_with_negative else squad_task.KEEP_PADDING_V1


def run(options, strategy, training_config, batching):
    """Trains and/or evaluates; returns the final results of the best checkpoint (or None).

    `training_config`: a `loop.TrainingConfig` from the shared flags whose step counts are
    replaced here (`num_train_steps`, `num_warmup_steps` follow from the train file);
    `batching`: the run's `length_buckets.Batching`.
    """
    albert_config = AlbertConfig.from_json_file(options.albert_config_file)
    options.validate(albert_config)
    tokenizer = tokenization.FullTokenizer.from_scratch(None, options.do_lower_case,
                                                        options.spm_model_file)
    albert_config.check_vocabulary(len(tokenizer.vocab), options.spm_model_file,
                                   options.albert_config_file)
    tf.io.gfile.makedirs(options.output_dir)
    if options.do_train:
        albert_config.write_beside(options.output_dir)

    train_records, total_steps = None, None
    if options.do_train:
        train_records = data.prepare_training_records(
            options.train_file, tokenizer, options.spm_model_file, options.feature_options,
            options.output_dir, options.train_feature_file)
        num_examples = train_records.num_examples
    elif options.train_file:
        num_examples = len(data.read_training_examples(options.train_file))
    if options.train_file:
        total_steps = num_train_steps(num_examples, training_config.train_batch_size,
                                      options.num_train_epochs)
        if total_steps <= 0:
            raise errors.UserInputError(f"{options.train_file}: {num_examples} examples × "
                             f"{options.num_train_epochs} epochs / batch "
                             f"{training_config.train_batch_size} gives no training step")
        logging.info("num_train_steps = %d (%d examples)", total_steps, num_examples)

    task = squad_task.SquadTask(
        albert_config, options.version_2_with_negative, options.max_seq_length,
        train_records.record_file if train_records else None, options.start_n_top,
        options.end_n_top, options.dropout_prob, options.use_einsum, batching)
    config = dataclasses.replace(
        training_config, output_dir=options.output_dir, init_checkpoint=options.init_checkpoint,
        num_train_steps=total_steps or 1,
        num_warmup_steps=int((total_steps or 0) * options.warmup_proportion))
    trainer = loop.Trainer(task, strategy, config)
    if not options.do_predict:
        trainer.train()
        return None
    return evaluate_checkpoints(trainer, _evaluator(options, tokenizer, strategy, batching),
                                options, total_steps)


def _evaluator(options, tokenizer, strategy, batching):
    def prepare(input_file, name, record_flag=None, side_flag=None):
        return data.prepare_predict_set(
            input_file, tokenizer, options.spm_model_file, options.feature_options,
            options.output_dir, name, record_flag, side_flag)

    predict_set = prepare(options.predict_file, "eval", options.predict_feature_file,
                          options.predict_feature_left_file)
    threshold_set = (prepare(options.threshold_predict_file, "threshold")
                     if options.threshold_predict_file else None)
    return prediction.SquadEvaluator(
        predict_set, options.version_2_with_negative, options.max_seq_length,
        options.predict_batch_size, options.n_best_size, options.max_answer_length,
        options.start_n_top, options.end_n_top, threshold_set,
        options.null_score_diff_threshold, strategy, batching)


def evaluate_checkpoints(trainer, evaluator, options, last_step):
    """Scores every `model.ckpt-<step>` up to `last_step`, keeps the best, re-predicts with it.

    With --do_train, each checkpoint is scored as soon as it is saved, before the trainer's
    `keep_checkpoint_max` pruning can remove it. `last_step` None (no train file): the
    checkpoints present now. No checkpoint at all: the `--init_checkpoint` itself (a fine-tuned
    SQuAD checkpoint) is scored once.
    """
    output_dir = options.output_dir
    results_path = os.path.join(output_dir, "eval_results.txt")

    def evaluate(prefix):
        step = trainer.checkpoints.restore_model(prefix)
        results = evaluator.evaluate(trainer.model, output_dir)
        trainer.write_eval_summaries(
            {k: v for k, v in dict(results, global_step=step).items()
             if isinstance(v, (int, float))})
        return results

    if not evaluator.is_labelled:
        if options.do_train:
            trainer.train()
        return _predict_unlabelled(trainer, evaluator, options,
                                   evaluation.list_checkpoints(output_dir))
    if options.do_train:
        summary = evaluation.train_and_evaluate(
            trainer, output_dir, evaluate, do_train=True, do_eval=True,
            eval_timeout_secs=options.eval_timeout_secs, poll_seconds=1.0)
    else:
        existing = evaluation.list_checkpoints(output_dir)
        if last_step is None and not existing:
            return _evaluate_init_checkpoint(evaluate, options)
        summary = evaluation.CheckpointEvaluator(
            output_dir, evaluate, "f1", higher_is_better=True,
            last_step=existing[-1][0] if last_step is None else last_step,
            timeout_seconds=options.eval_timeout_secs).run()
    best = os.path.join(output_dir, checkpoints.BEST_CHECKPOINT_NAME)
    if not tf.io.gfile.exists(best + ".index"):
        logging.warning("No checkpoint was evaluated in %s", output_dir)
        return None
    results = dict(evaluate(best), global_step=summary["best_step"])
    lines = [f"{key} = {results[key]}" for key in sorted(results)]
    io_utils.append_text(results_path, "\n".join(
        lines + [f"best perf happened at step: {summary['best_step']}"]) + "\n")
    logging.info("%s with model.ckpt-best (step %s): %s", options.predict_file,
                 summary["best_step"], ", ".join(lines))
    return results


def _evaluate_init_checkpoint(evaluate, options):
    """No checkpoint in --output_dir: scores --init_checkpoint (a fine-tuned SQuAD one) once."""
    if not options.init_checkpoint:
        raise errors.UserInputError(f"--do_predict: no model.ckpt-<step> in {options.output_dir} "
                                 "and no --init_checkpoint to predict with")
    results = evaluate(options.init_checkpoint)
    lines = [f"{key} = {results[key]}" for key in sorted(results)]
    io_utils.append_text(os.path.join(options.output_dir, "eval_results.txt"), "\n".join(
        [f"checkpoint = {options.init_checkpoint}"] + lines) + "\n")
    logging.info("%s with %s: %s", options.predict_file, options.init_checkpoint,
                 ", ".join(lines))
    return results


def _predict_unlabelled(trainer, evaluator, options, existing):
    """A predict file without answers (a test set): predictions from model.ckpt-best, else the
    latest checkpoint, else --init_checkpoint; nothing to score."""
    best = os.path.join(options.output_dir, checkpoints.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + ".index"):
        checkpoint = best
    elif existing:
        checkpoint = existing[-1][1]
    elif options.init_checkpoint:
        checkpoint = options.init_checkpoint
    else:
        raise errors.UserInputError(f"--do_predict: no checkpoint in {options.output_dir} and no "
                                 "--init_checkpoint to predict with")
    trainer.checkpoints.restore_model(checkpoint)
    threshold = evaluator.predict_unlabelled(trainer.model, options.output_dir)
    logging.info("%s has no answers: wrote the predictions of %s to %s and skipped scoring",
                 options.predict_file, checkpoint, options.output_dir)
    return None if threshold is None else {"null_score_diff_threshold": threshold}
