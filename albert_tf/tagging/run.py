"""The run_tagging.py flow, on the shared fine-tuning steps: cached records, training,
evaluation of every checkpoint as it is saved, test predictions.

    job = TaggingJob(data_dir, output_dir, albert_config, max_seq_length=128,
                     spm_model_file="30k-clean.model")
    trainer = job.build_trainer(strategy, training_config, do_train=True, do_eval=True)
    job.train_and_evaluate(trainer, do_train=True, do_eval=True, eval_batch_size=32)
    job.predict(trainer, batch_size=32)   # test_predictions.txt, test_results.txt
"""

import os

from absl import logging
import tensorflow as tf

from albert_tf import errors
from albert_tf.files import feature_records, io_utils
from albert_tf.text import tokenization
from albert_tf.tagging import features, reader
from albert_tf.tagging import task as tagging_task
from albert_tf.training import fine_tuning, loop
from albert_tf.training import length_buckets as length_buckets_lib

LABELS_FILE = "labels.txt"
CUT_WORD = "_"  # the prediction written for a word that did not fit in max_seq_length


class TaggingJob(fine_tuning.FineTuningJob):
    """One tagging data set's files, labels, tokenizer and model settings."""

    def __init__(self, data_dir, output_dir, albert_config, max_seq_length, spm_model_file=None,
                 vocab_file=None, do_lower_case=True,
                 batching=length_buckets_lib.PADDED):
        if not spm_model_file and not vocab_file:
            raise errors.UserInputError("give --spm_model_file (SentencePiece) or --vocab_file "
                                     "(WordPiece)")
        if max_seq_length > albert_config.max_position_embeddings:
            raise errors.UserInputError(
                f"--max_seq_length={max_seq_length} exceeds max_position_embeddings "
                f"{albert_config.max_position_embeddings} of --albert_config_file")
        self.data_dir, self.output_dir = data_dir, output_dir
        self.albert_config = albert_config
        self.max_seq_length = max_seq_length
        self.vocabulary = spm_model_file or vocab_file
        self.do_lower_case = do_lower_case
        self.batching = batching
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case, spm_model_file)
        albert_config.check_vocabulary(len(tokenizer.vocab), self.vocabulary)
        self.word_pieces = features.WordPieces(tokenizer, do_lower_case)
        self.labels = reader.label_list(data_dir)

    def records(self, split):
        """(cached record path, sentences) of `split`, the records written first if missing."""
        data_file = reader.split_path(self.data_dir, split)
        sentences = reader.read_sentences(data_file)
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

    def build_trainer(self, strategy, training_config, do_train=False, do_eval=False):
        train_file = self.records("train")[0] if do_train else None
        eval_file = self.records("dev")[0] if do_eval else None
        io_utils.atomic_write_text(os.path.join(self.output_dir, LABELS_FILE),
                                   "\n".join(self.labels) + "\n")
        task = tagging_task.TaggingTask(self.albert_config, self.labels, self.max_seq_length,
                                        train_file, eval_file, self.batching)
        return loop.Trainer(task, strategy, training_config)

    def score(self, trainer, checkpoint_path, path, batch_size):
        """(metrics with `global_step`, aggregated state) of one checkpoint on one record file."""
        step = trainer.checkpoints.restore_model(checkpoint_path)
        state = trainer.aggregate(trainer.task.dataset_of(path, batch_size),
                                  what=f"Tagging {os.path.basename(path)}")
        results = dict(trainer.task.reduce_aggregated_logs(state), global_step=step)
        return results, state

    def evaluate(self, trainer, checkpoint_path, batch_size):
        results, _ = self.score(trainer, checkpoint_path, trainer.task.eval_file, batch_size)
        trainer.write_eval_summaries(results)
        return results

    def predict(self, trainer, batch_size):
        """test_predictions.txt (`word gold predicted` per line) and test_results.txt from
        model.ckpt-best; returns the two paths."""
        checkpoint = self.best_checkpoint()
        path, sentences = self.records("test")
        results, state = self.score(trainer, checkpoint, path, batch_size)
        blocks = []
        for index, sentence in enumerate(sentences):
            predicted = [self.labels[i] for i in state[index][1]]
            predicted += [CUT_WORD] * (len(sentence.words) - len(predicted))
            blocks.append("\n".join(f"{word} {gold} {tag}" for word, gold, tag
                                    in zip(sentence.words, sentence.tags, predicted)))
        predictions_path = os.path.join(self.output_dir, "test_predictions.txt")
        io_utils.atomic_write_text(predictions_path, "\n\n".join(blocks) + "\n")
        lines = [f"{key} = {results[key]}" for key in sorted(results)]
        results_path = os.path.join(self.output_dir, "test_results.txt")
        io_utils.atomic_write_text(results_path, "\n".join(lines + [f"checkpoint = {checkpoint}"])
                                   + "\n")
        logging.info("Test (%s): %s", checkpoint, ", ".join(lines))
        return predictions_path, results_path

