"""SQuAD files → feature records on disk, reusing a keyed cache when one matches.

Training and prediction both go through a TFRecord (the model reads records, never Python
lists), written under the flag's path (`--train_feature_file`, `--predict_feature_file`,
`--predict_feature_left_file`) or, when a flag is not given, under `--output_dir`; the file
names carry the cache key (see `feature_cache`), so a changed flag or input builds new ones.
"""

import dataclasses
import os
import random

from absl import logging

from albert_tf import errors
from albert_tf.squad import feature_cache, features, reader

TRAIN_SHUFFLE_SEED = 12345  # the original shuffles the training examples once with this seed


@dataclasses.dataclass(frozen=True)
class FeatureOptions:
    max_seq_length: int
    doc_stride: int
    max_query_length: int
    do_lower_case: bool


@dataclasses.dataclass
class TrainingRecords:
    record_file: str
    num_examples: int
    num_features: int


@dataclasses.dataclass
class PredictSet:
    """One SQuAD file ready to predict and score: its JSON, examples, windows and records."""

    input_file: str
    dataset: list  # the `data` list, for the official scoring
    examples: list
    features: list  # window metadata (`InputFeatures` without tensors)
    record_file: str


def _key(input_file, spm_model_file, options, is_training):
    return feature_cache.cache_key(input_file, spm_model_file, options.max_seq_length,
                                   options.doc_stride, options.max_query_length,
                                   options.do_lower_case, is_training)


def _convert(examples, tokenizer, options, is_training):
    converted, report = features.convert_examples_to_features(
        examples, tokenizer, options.max_seq_length, options.doc_stride,
        options.max_query_length, is_training, options.do_lower_case)
    logging.info("%d examples → %d features (%d with the answer in the window); skipped: "
                 "%d alignment mismatches, %d answers outside the pieces; %d questions "
                 "truncated", report.num_examples, report.num_features, report.num_positive,
                 len(report.mismatched), len(report.bad_answer_spans),
                 len(report.truncated_questions))
    return converted


def _require_examples(examples, input_file, flag_name):
    if not examples:
        raise errors.UserInputError(f"{flag_name}={input_file}: no question in the file (expected "
                                 "SQuAD JSON: data[].paragraphs[].qas[])")


def read_training_examples(train_file):
    """Training examples in the original's shuffled order."""
    examples, _ = reader.read_squad_examples(train_file, is_training=True)
    _require_examples(examples, train_file, "--train_file")
    random.Random(TRAIN_SHUFFLE_SEED).shuffle(examples)
    return examples


def prepare_training_records(train_file, tokenizer, spm_model_file, options, output_dir,
                             train_feature_file=None):
    examples = read_training_examples(train_file)
    key = _key(train_file, spm_model_file, options, True)
    record_file, side_file = feature_cache.cache_paths(
        train_feature_file or os.path.join(output_dir, "train.tf_record"), None, key)
    cached = feature_cache.read(key, record_file, side_file)
    if cached is not None:
        logging.info("Reusing training features %s", record_file)
        return TrainingRecords(record_file, len(examples), cached[0])
    converted = _convert(examples, tokenizer, options, True)
    feature_cache.write(converted, key, record_file, side_file, is_training=True)
    return TrainingRecords(record_file, len(examples), len(converted))


def prepare_predict_set(input_file, tokenizer, spm_model_file, options, output_dir, name,
                        predict_feature_file=None, predict_feature_left_file=None):
    """`name` ("eval", "threshold") names the default cache files in `output_dir`."""
    dataset = reader.load_squad_json(input_file)
    examples, _ = reader.read_squad_examples(input_file, is_training=False)
    _require_examples(examples, input_file, "--predict_file" if name == "eval"
                      else f"--{name}_predict_file")
    key = _key(input_file, spm_model_file, options, False)
    record_file, side_file = feature_cache.cache_paths(
        predict_feature_file or os.path.join(output_dir, f"{name}.tf_record"),
        predict_feature_left_file, key)
    cached = feature_cache.read(key, record_file, side_file)
    if cached is not None:
        logging.info("Reusing %s features %s", name, record_file)
        return PredictSet(input_file, dataset, examples, cached[1], record_file)
    converted = _convert(examples, tokenizer, options, False)
    feature_cache.write(converted, key, record_file, side_file, is_training=False)
    _, metadata = feature_cache.read(key, record_file, side_file)
    return PredictSet(input_file, dataset, examples, metadata, record_file)
