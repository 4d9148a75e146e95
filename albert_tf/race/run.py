"""The run_race.py flow: feature caches, training, evaluation of every checkpoint, test (the
export is `export.race`).

    job = RaceJob(data_dir, output_dir, albert_config, max_seq_length=512, max_qa_length=128,
                  levels=("middle", "high"), spm_model_file="30k-clean.model")
    fine_tuning.train_evaluate_predict(job, options, training_config, strategy)
    # eval_results.txt, model.ckpt-best; predict_results.txt, test_predictions.tsv
    export.race.export_from_checkpoint(job, job.best_checkpoint(), export_dir)

With --do_train and --do_eval together, each checkpoint is evaluated on the dev split as soon
as it is saved, before the trainer's keep-checkpoint pruning can remove it, so every checkpoint
is evaluated (the original kept all of them on disk instead). With --do_eval alone the
evaluator polls `output_dir` for the checkpoints of a training job running elsewhere. Results
go to `eval_results.txt`, `best_trial.txt` and `model.ckpt-best`
(`training.evaluation.CheckpointEvaluator`).

--do_predict scores the TEST split with model.ckpt-best under whatever strategy runs (the
original raised NameError without a TPU) and writes the metrics to `predict_results.txt`
and one line per question to `test_predictions.tsv`.
"""

import os

from absl import logging

from albert_tf import errors
from albert_tf.files import io_utils
from albert_tf.race import features, prepare, reader
from albert_tf.race import task as race_task
from albert_tf.training import evaluation, fine_tuning
from albert_tf.training import length_buckets as length_buckets_lib

PREDICT_RESULTS = "predict_results.txt"
TEST_PREDICTIONS = "test_predictions.tsv"


class RaceJob(fine_tuning.FineTuningJob):
    """RACE data settings, cache files and the model settings of one run."""

    dev_set_name = "dev split"

    def __init__(self, data_dir, output_dir, albert_config, max_seq_length, max_qa_length,
                 levels=reader.LEVELS, spm_model_file=None, vocab_file=None, do_lower_case=True,
                 dropout_prob=0.1, train_file=None, eval_file=None, predict_file=None,
                 batching=length_buckets_lib.PADDED):
        super().__init__(output_dir, albert_config, max_seq_length, spm_model_file, vocab_file,
                         do_lower_case, batching)
        features.check_lengths(max_seq_length, max_qa_length)
        if not 0.0 <= dropout_prob < 1.0:
            raise errors.UserInputError(f"--dropout_prob={dropout_prob}: must be in [0, 1)")
        self.levels = tuple(levels)
        self.dropout_prob = dropout_prob
        self.requested = {"train": train_file, "dev": eval_file, "test": predict_file}
        self.settings = prepare.CacheSettings(
            data_dir=data_dir, levels=self.levels, max_seq_length=max_seq_length,
            max_qa_length=max_qa_length, do_lower_case=do_lower_case,
            spm_model_file=spm_model_file, vocab_file=vocab_file, default_dir=output_dir)

    def cache(self, split):
        """The feature cache of `split` (train, dev or test), written if missing."""
        return prepare.prepare_split(self.settings, split, self.requested[split], self.tokenizer)

    def write_records(self, do_train, do_eval, do_predict):
        """The feature caches of the splits the run reads, written if missing."""
        return {"train_file": self.cache("train") if do_train else None,
                "eval_file": self.cache("dev") if do_eval else None,
                "predict_file": self.cache("test") if do_predict else None}

    def build_task(self, task_inputs):
        return race_task.RaceTask(self.albert_config, self.max_seq_length, self.levels,
                                  self.dropout_prob, batching=self.batching, **task_inputs)

    def predict(self, trainer, checkpoint, batch_size):
        """Scores the test split with `checkpoint`; returns the two files written and the
        results."""
        test_file = trainer.task.predict_file
        results, state = self.score(trainer, checkpoint,
                                    trainer.task.predict_dataset(None, batch_size),
                                    f"Scoring {test_file}")
        arrays = race_task.arrays_of(state)
        ids = race_task.question_ids(test_file)
        if len(ids) != len(arrays["label_ids"]):
            raise RuntimeError(f"{test_file}: {len(arrays['label_ids'])} predictions for "
                               f"{len(ids)} records")
        best_value = evaluation.CheckpointEvaluator(
            self.output_dir, None, "eval_accuracy").best_value
        notes = [f"checkpoint = {checkpoint}"]
        if best_value is not None:
            notes.append(f"best_dev_eval_accuracy = {best_value}")
        results_path = os.path.join(self.output_dir, PREDICT_RESULTS)
        lines = evaluation.write_results(results_path, results, notes)
        predictions_path = os.path.join(self.output_dir, TEST_PREDICTIONS)
        io_utils.atomic_write_text(predictions_path, prediction_lines(ids, arrays))
        logging.info("Test (%s): %s", checkpoint, ", ".join(lines))
        return (results_path, predictions_path), results


def prediction_lines(ids, arrays):
    """`test_predictions.tsv`: a header, then one line per question in test-file order."""
    header = ["id", "question", "level", "answer", "prediction",
              *(f"prob_{letter}" for letter in reader.ANSWER_LETTERS)]
    lines = ["\t".join(header)]
    for (article_id, question), label, level, prediction, probabilities in zip(
            ids, arrays["label_ids"], arrays["level_ids"], arrays["predictions"],
            arrays["probabilities"]):
        lines.append("\t".join([
            article_id, str(question), reader.LEVELS[int(level)],
            reader.ANSWER_LETTERS[int(label)], reader.ANSWER_LETTERS[int(prediction)],
            *(f"{p:.6f}" for p in probabilities)]))
    return "\n".join(lines) + "\n"
