"""The run_tagging.py flow, on the shared fine-tuning steps: cached records, training,
evaluation of every checkpoint as it is saved, test predictions.

    job = TaggingJob(data_dir, output_dir, albert_config, max_seq_length=128,
                     spm_model_file="30k-clean.model")
    fine_tuning.train_evaluate_predict(job, options, training_config, strategy)
    # eval_results.txt, model.ckpt-best; test_predictions.txt, test_results.txt
"""

import os

from absl import logging
import tensorflow as tf

from albert_tf.files import feature_records, io_utils
from albert_tf.tagging import features, reader
from albert_tf.tagging import task as tagging_task
from albert_tf.training import evaluation, fine_tuning
from albert_tf.training import length_buckets as length_buckets_lib

LABELS_FILE = "labels.txt"
CUT_WORD = "_"  # the prediction written for a word that did not fit in max_seq_length


class TaggingJob(fine_tuning.FineTuningJob):
    """One tagging data set's files, labels, tokenizer and model settings."""

    def __init__(self, data_dir, output_dir, albert_config, max_seq_length, spm_model_file=None,
                 vocab_file=None, do_lower_case=True,
                 batching=length_buckets_lib.PADDED, columns=reader.DEFAULT_COLUMNS):
        """`columns`: the keys of JSON Lines sentences (`reader.Columns`)."""
        super().__init__(output_dir, albert_config, max_seq_length, spm_model_file, vocab_file,
                         do_lower_case, batching)
        self.data_dir = data_dir
        self.word_pieces = features.WordPieces(self.tokenizer, do_lower_case)
        self.columns = columns
        self.labels = reader.label_list(data_dir, columns)

    def records(self, split):
        """(cached record path, sentences) of `split`, the records written first if missing."""
        data_file = reader.split_path(self.data_dir, split)
        sentences = reader.read_sentences(data_file, self.columns)
        path = feature_records.cached_record_path(
            self.output_dir, "tagging", split, self.max_seq_length, data_file, self.vocabulary,
            self.do_lower_case, bool(self.word_pieces.tokenizer.sp_model))
        if tf.io.gfile.exists(path):
            logging.info("reusing %s (%d sentences)", path, len(sentences))
        else:
            label_map = {label: index for index, label in enumerate(self.labels)}
            features.write_records(sentences, self.word_pieces, label_map, self.max_seq_length,
                                   path)
        return path, sentences

    def write_records(self, do_train, do_eval, do_predict):
        """The cached records of the splits the run reads, and the label file."""
        reader.write_label_file(os.path.join(self.output_dir, LABELS_FILE), self.labels)
        return {"train_file": self.records("train")[0] if do_train else None,
                "eval_file": self.records("dev")[0] if do_eval else None,
                "predict_file": self.records("test")[0] if do_predict else None}

    def build_task(self, task_inputs):
        return tagging_task.TaggingTask(self.albert_config, self.labels, self.max_seq_length,
                                        batching=self.batching, **task_inputs)

    def predict(self, trainer, checkpoint, batch_size):
        """test_predictions.txt (`word gold predicted` per line) and test_results.txt from
        `checkpoint`; returns the two paths and the results."""
        path, sentences = self.records("test")
        results, state = self.score(trainer, checkpoint,
                                    trainer.task.predict_dataset(None, batch_size),
                                    f"Tagging {os.path.basename(path)}")
        blocks = []
        for index, sentence in enumerate(sentences):
            predicted = [self.labels[i] for i in state[index][1]]
            predicted += [CUT_WORD] * (len(sentence.words) - len(predicted))
            blocks.append("\n".join(f"{word} {gold} {tag}" for word, gold, tag
                                    in zip(sentence.words, sentence.tags, predicted)))
        predictions_path = os.path.join(self.output_dir, "test_predictions.txt")
        io_utils.atomic_write_text(predictions_path, "\n\n".join(blocks) + "\n")
        results_path = os.path.join(self.output_dir, "test_results.txt")
        lines = evaluation.write_results(results_path, results, [f"checkpoint = {checkpoint}"])
        logging.info("Test (%s): %s", checkpoint, ", ".join(lines))
        return (predictions_path, results_path), results

