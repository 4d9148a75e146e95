"""The run_squad.py job, for v1.1 and v2.0, on the shared fine-tuning flow.

    job = SquadJob(SquadRun(version_2_with_negative=True, train_file=..., predict_file=...),
                   output_dir, albert_config, max_seq_length=384, spm_model_file=...,
                   batching=batching)
    outcome = fine_tuning.train_evaluate_predict(job, job.flow_options(...), training_config,
                                                 strategy)
    outcome.test_results  # the scores, or the v2 threshold of an unlabelled predict file

What differs from GLUE is the job's plan, not a flow: the step counts follow from the train
file and --num_train_epochs (`SquadJob.plan`); the predict file is the evaluation set when it has
answers (every checkpoint scored with the official scoring as it is written, `squad.task`),
else it is only predicted; v2 chooses its no-answer threshold (`squad.prediction`).

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
import math
import os

from absl import logging

from albert_tf import checkpoints, errors
from albert_tf.squad import data, prediction, reader
from albert_tf.squad import task as squad_task
from albert_tf.training import evaluation, fine_tuning, length_buckets


@dataclasses.dataclass
class SquadRun:
    """SQuAD's own options, by flag name (see run_squad.py for the meanings); the shared ones
    (config, vocabulary, lengths, batch sizes, what to run) are the job's and the flow's."""

    version_2_with_negative: bool = False
    train_file: str = None
    predict_file: str = None
    threshold_predict_file: str = None
    null_score_diff_threshold: float = None
    train_feature_file: str = None
    predict_feature_file: str = None
    predict_feature_left_file: str = None
    doc_stride: int = 128
    max_query_length: int = 64
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    n_best_size: int = 20
    max_answer_length: int = 30
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1

    def validate(self, max_seq_length, do_train, do_predict):
        for name in ("num_train_epochs", "warmup_proportion", "dropout_prob",
                     "null_score_diff_threshold"):  # absl's bounds let NaN through
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise errors.UserInputError(f"--{name}={value}: expected a finite number")
        if not (do_train or do_predict):
            raise errors.UserInputError("At least one of --do_train, --do_predict (or "
                                        "--export_dir) must be given")
        if do_train and not self.train_file:
            raise errors.UserInputError("--do_train needs --train_file")
        if do_predict and not self.predict_file:
            raise errors.UserInputError("--do_predict needs --predict_file")
        if max_seq_length <= self.max_query_length + 3:
            raise errors.UserInputError(
                f"--max_seq_length ({max_seq_length}) must be greater than --max_query_length "
                f"({self.max_query_length}) + 3")
        for name in ("doc_stride", "n_best_size", "max_answer_length"):
            if getattr(self, name) <= 0:
                raise errors.UserInputError(f"--{name} must be > 0, got {getattr(self, name)}")
        if self.version_2_with_negative:
            if self.start_n_top > max_seq_length or self.end_n_top > max_seq_length:
                raise errors.UserInputError(
                    "--start_n_top and --end_n_top must be ≤ --max_seq_length")
        elif self.threshold_predict_file or self.null_score_diff_threshold is not None:
            raise errors.UserInputError("--threshold_predict_file / --null_score_diff_threshold "
                                        "apply only with --version_2_with_negative")


def keep_padding(options):
    """Why the run's model needs batches padded to max_seq_length (v1.1), or None (v2)."""
    return None if options.version_2_with_negative else squad_task.KEEP_PADDING_V1


def num_train_steps(num_examples, train_batch_size, num_train_epochs):
    """The original: int(#examples / batch × epochs), counted over examples, not windows."""
    return int(num_examples / train_batch_size * num_train_epochs)


class SquadJob(fine_tuning.FineTuningJob):
    """SQuAD's data, tokenizer and model settings; see the module docstring."""

    dev_set_name = "predict file"
    eval_poll_seconds = 1.0

    def __init__(self, options, output_dir, albert_config, max_seq_length, spm_model_file,
                 do_lower_case=True, batching=length_buckets.PADDED,
                 config_source="--albert_config_file"):
        """`options`: a `SquadRun`."""
        super().__init__(output_dir, albert_config, max_seq_length, spm_model_file, None,
                         do_lower_case, batching, config_source)
        self.options = options
        self.feature_options = data.FeatureOptions(max_seq_length, options.doc_stride,
                                                   options.max_query_length, do_lower_case)

    def flow_options(self, output_dir, do_train, do_predict, predict_batch_size=8, **shared):
        """The flow's `FlowOptions`: SQuAD's --do_predict evaluates every checkpoint on a
        predict file with answers (in batches of --predict_batch_size), and in any case
        predicts it with the best checkpoint."""
        self.options.validate(self.max_seq_length, do_train, do_predict)
        reader.check_version(self.options.train_file, "--train_file",
                             self.options.version_2_with_negative, training=True)
        if do_predict:
            reader.check_version(self.options.predict_file, "--predict_file",
                                 self.options.version_2_with_negative)
        labelled = do_predict and prediction.has_answers(
            reader.load_squad_json(self.options.predict_file))
        return fine_tuning.FlowOptions(output_dir, do_train=do_train, do_eval=labelled,
                                       do_predict=do_predict, eval_batch_size=predict_batch_size,
                                       predict_batch_size=predict_batch_size, **shared)

    def scorer(self):
        """The `prediction.SquadEvaluator` of --predict_file (and --threshold_predict_file),
        their features prepared if missing."""
        options = self.options

        def prepare(input_file, name, record_flag=None, side_flag=None):
            return data.prepare_predict_set(
                input_file, self.tokenizer, self.spm_model_file, self.feature_options,
                self.output_dir, name, record_flag, side_flag)

        predict_set = prepare(options.predict_file, "eval", options.predict_feature_file,
                              options.predict_feature_left_file)
        threshold_set = (prepare(options.threshold_predict_file, "threshold")
                         if options.threshold_predict_file else None)
        return prediction.SquadEvaluator(
            predict_set, options.version_2_with_negative, options.n_best_size,
            options.max_answer_length, options.start_n_top, options.end_n_top, threshold_set,
            options.null_score_diff_threshold)

    def plan(self, flow_options, training_config):
        """The training records and the predict sets, written if missing; the steps from the
        train file, int(examples / batch × epochs), a proportion of them warming up; the last
        step to evaluate (without a train file: the newest checkpoint present); an empty
        `output_dir` predicts with --init_checkpoint."""
        options = self.options
        train_records = total_steps = None
        if flow_options.do_train:
            train_records = data.prepare_training_records(
                options.train_file, self.tokenizer, self.spm_model_file, self.feature_options,
                self.output_dir, options.train_feature_file)
            num_examples = train_records.num_examples
        elif options.train_file:
            num_examples = len(data.read_training_examples(options.train_file))
        if options.train_file:
            total_steps = num_train_steps(num_examples, training_config.train_batch_size,
                                          options.num_train_epochs)
            if total_steps <= 0:
                raise errors.UserInputError(
                    f"{options.train_file}: {num_examples} examples × {options.num_train_epochs} "
                    f"epochs / batch {training_config.train_batch_size} gives no training step")
            logging.info("num_train_steps = %d (%d examples)", total_steps, num_examples)
            last_step = total_steps
        else:
            existing = evaluation.list_checkpoints(self.output_dir)
            last_step = existing[-1][0] if existing else None
        config = dataclasses.replace(
            training_config, num_train_steps=total_steps or 1,
            num_warmup_steps=int((total_steps or 0) * options.warmup_proportion))
        task_inputs = {
            "train_record_file": train_records.record_file if train_records else None,
            "scorer": (self.scorer() if flow_options.do_eval or flow_options.do_predict
                       else None)}
        return fine_tuning.RunPlan(config, task_inputs, last_step,
                                   predict_fallback=flow_options.init_checkpoint)

    def build_task(self, task_inputs):
        options = self.options
        return squad_task.SquadTask(
            self.albert_config, options.version_2_with_negative, self.max_seq_length,
            start_n_top=options.start_n_top, end_n_top=options.end_n_top,
            dropout_prob=options.dropout_prob,
            batching=self.batching, output_dir=self.output_dir, **task_inputs)

    def predict(self, trainer, checkpoint, batch_size):
        """Scores (or, without answers, predicts) the predict file with `checkpoint`
        (model.ckpt-best, else the latest checkpoint, else --init_checkpoint); returns the
        files written and the results (without answers: the v2 threshold used, or None)."""
        if not trainer.task.scorer.is_labelled:
            _, state = self.run_whole_set(trainer, checkpoint,
                                          trainer.task.predict_dataset(None, batch_size),
                                          f"Predicting {self.options.predict_file}")
            threshold = trainer.task.reduce_aggregated_logs(state) or None
            logging.info("%s has no answers: wrote the predictions of %s to %s and skipped "
                         "scoring", self.options.predict_file, checkpoint, self.output_dir)
            return self._prediction_files(), threshold
        best = os.path.join(self.output_dir, checkpoints.BEST_CHECKPOINT_NAME)
        if checkpoint != best and checkpoint == checkpoints.latest_checkpoint(self.output_dir):
            logging.warning("No checkpoint was evaluated in %s", self.output_dir)
            return [], None
        results = self.evaluate(trainer, checkpoint, batch_size)
        note = (f"best perf happened at step: {results['global_step']}"
                if checkpoint == best else f"checkpoint = {checkpoint}")
        lines = evaluation.write_results(os.path.join(self.output_dir, "eval_results.txt"),
                                         results, [note], append=True)
        logging.info("%s with %s: %s", self.options.predict_file, checkpoint, ", ".join(lines))
        return self._prediction_files(), results

    def _prediction_files(self):
        names = ["predictions.json", "nbest_predictions.json"]
        if self.options.version_2_with_negative:
            names.append("null_odds.json")
        return [os.path.join(self.output_dir, name) for name in names]
