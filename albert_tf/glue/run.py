"""The run_classifier.py flow: cached records, training, evaluation of every checkpoint, prediction.

    job = ClassifierJob("mrpc", data_dir, output_dir, albert_config, max_seq_length=128,
                        spm_model_file="30k-clean.model", batching=batching)
    fine_tuning.train_evaluate_predict(job, options, training_config, strategy)
    # eval_results.txt, model.ckpt-best; test_results.tsv, submit_results.tsv

With --do_train and --do_eval together, each checkpoint is evaluated as soon as it is saved,
before the trainer's `keep_checkpoint_max` pruning can remove it, so every checkpoint is
evaluated (the original kept them all on disk instead, up to hundreds of full checkpoints).
With --do_eval alone, the evaluator polls `output_dir` for the checkpoints of a training job
running elsewhere, as the original's eval loop. Either way the results go to `eval_results.txt`,
`best_trial.txt` and `model.ckpt-best` (`training.evaluation.CheckpointEvaluator`).
"""

import os

from absl import logging
import numpy as np

from albert_tf import errors
from albert_tf.files import io_utils
from albert_tf.glue import features, processors
from albert_tf.glue import task as glue_task
from albert_tf.training import fine_tuning
from albert_tf.training import length_buckets as length_buckets_lib


class ClassifierJob(fine_tuning.FineTuningJob):
    """One GLUE task's data, tokenizer and model settings."""

    def __init__(self, task_name, data_dir, output_dir, albert_config, max_seq_length,
                 spm_model_file=None, vocab_file=None, do_lower_case=True, cached_dir=None,
                 batching=length_buckets_lib.PADDED):
        self.processor = processors.get_processor(task_name, use_spm=bool(spm_model_file),
                                                  do_lower_case=do_lower_case)
        self.task_name = task_name.lower()
        if max_seq_length < 3:
            raise errors.UserInputError(f"--max_seq_length={max_seq_length} leaves no room for "
                                        "[CLS] a [SEP] b [SEP]; it must be >= 3")
        super().__init__(output_dir, albert_config, max_seq_length, spm_model_file, vocab_file,
                         do_lower_case, batching)
        self.data_dir = data_dir
        self.cached_dir = cached_dir or output_dir
        self.label_list = self.processor.get_labels()
        self.regression = self.processor.is_regression

    @property
    def num_labels(self):
        return len(self.label_list)

    def records(self, split):
        """(cached TFRecord path, examples) of `split` (train, dev or test)."""
        return features.get_or_create_records(
            self.processor, self.data_dir, split, self.task_name, self.max_seq_length,
            self.tokenizer, self.cached_dir, self.spm_model_file or self.vocab_file,
            self.do_lower_case, bool(self.spm_model_file))

    def write_records(self, do_train, do_eval, do_predict):
        """The cached records of the splits the run reads, written if missing."""
        inputs = {}
        for split, key, wanted in (("train", "train_file", do_train), ("dev", "eval_file", do_eval),
                                   ("test", "predict_file", do_predict)):
            if wanted:
                inputs[key], examples = self.records(split)
                logging.info("%s: %d examples", split, len(examples))
        return inputs

    def build_task(self, task_inputs):
        return glue_task.ClassifierTask(self.albert_config, self.task_name, self.num_labels,
                                        self.max_seq_length, batching=self.batching,
                                        **task_inputs)

    def predict(self, trainer, checkpoint, batch_size):
        """test_results.tsv (probabilities) and submit_results.tsv (index, label) from
        `checkpoint`; returns the two paths (the test set has no labels to score)."""
        predict_file, examples = self.records("test")
        _, state = self.run_whole_set(trainer, checkpoint,
                                      trainer.task.predict_dataset(None, batch_size),
                                      f"Predicting {predict_file}")
        arrays = glue_task.concatenated(state)
        if len(arrays["predictions"]) != len(examples):
            raise RuntimeError(f"{predict_file}: {len(arrays['predictions'])} predictions for "
                               f"{len(examples)} examples; delete the stale cache file")
        logging.info("Predicted %d test examples with %s", len(examples), checkpoint)
        return self.write_predictions(examples, arrays["probabilities"], arrays["predictions"]), None

    def write_predictions(self, examples, probabilities, predictions):
        results_path = os.path.join(self.output_dir, "test_results.tsv")
        submit_path = os.path.join(self.output_dir, "submit_results.tsv")
        probability_lines = ["\t".join(str(p) for p in np.atleast_1d(row)) for row in probabilities]
        submit_lines = ["index\tprediction"]
        for example, prediction in zip(examples, predictions):
            label = str(prediction) if self.regression else self.label_list[int(prediction)]
            submit_lines.append(f"{example.guid}\t{label}")
        io_utils.atomic_write_text(results_path, "\n".join(probability_lines) + "\n")
        io_utils.atomic_write_text(submit_path, "\n".join(submit_lines) + "\n")
        return results_path, submit_path
