"""GLUE features: `[CLS] a [SEP] b [SEP]` ids, TFRecord files of them, and cached copies.

The conversion is the original's `convert_single_example`: a pair is truncated to
max_seq_length − 3 tokens by popping from the longer side (from `b` on a tie), a single
sequence is cut to max_seq_length − 2, segment ids are 0 for `[CLS] a [SEP]` and 1 for
`b [SEP]`, and everything is padded with 0. `label_ids` is the label's index, or the float
score for sts-b. The TFRecord features are the original's: int64 `input_ids`,
`input_mask`, `segment_ids` [max_seq_length], `label_ids` (int64; float32 for sts-b) and
`is_real_example`.

The original cached `<task>_train.tf_record` and reused it whatever `--max_seq_length`, the
vocabulary or the data were. Here a cache file's name encodes everything it depends on, so a
changed flag or file can never reuse a stale one (`cached_record_path`).
"""

import collections
import dataclasses
import os
from typing import List, Union

import tensorflow as tf
from absl import logging

from albert_tf import errors, progress
from albert_tf.files import feature_records
from albert_tf.files.feature_records import (  # noqa: F401 (cache names: glue API)
    cached_record_path, float_feature, int64_feature)
from albert_tf.glue import processors

_LOGGED_EXAMPLES = 5


def is_regression(task_name):
    """Whether the task's processor says it is a regression (one float label)."""
    return processors.processor_class(task_name).is_regression


@dataclasses.dataclass
class InputFeatures:
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    label_id: Union[int, float]
    is_real_example: bool = True


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Pops one token at a time from the longer list (from `tokens_b` on a tie), in place."""
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer, task_name):
    """One `InputExample` → `InputFeatures` (the original's layout, truncation and padding)."""
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[:max_seq_length - 2]

    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    padding = [0] * (max_seq_length - len(input_ids))

    if is_regression(task_name):
        label_id = float(example.label)
    else:
        label_map = {label: index for index, label in enumerate(label_list)}
        if example.label not in label_map:
            raise errors.UserInputError(f"example {example.guid}: label {example.label!r} is not one of {label_list}")
        label_id = label_map[example.label]
    if ex_index < _LOGGED_EXAMPLES:  # the original's dumps, shown at -v 1
        logging.debug("*** Example %s ***\ntokens: %s\ninput_ids: %s\nlabel: %s (id = %s)",
                     example.guid, " ".join(str(token) for token in tokens), input_ids,
                     example.label, label_id)
    return InputFeatures(input_ids + padding, input_mask + padding, segment_ids + padding, label_id)


def features_to_tf_example(feature, regression):
    fields = collections.OrderedDict()
    fields["input_ids"] = int64_feature(feature.input_ids)
    fields["input_mask"] = int64_feature(feature.input_mask)
    fields["segment_ids"] = int64_feature(feature.segment_ids)
    fields["label_ids"] = (float_feature([feature.label_id]) if regression
                           else int64_feature([feature.label_id]))
    fields["is_real_example"] = int64_feature([int(feature.is_real_example)])
    return tf.train.Example(features=tf.train.Features(feature=fields))


def write_records(examples, label_list, max_seq_length, tokenizer, output_file, task_name):
    """Converts `examples` and writes them to `output_file` (atomically); returns the count."""
    regression = is_regression(task_name)
    converting = progress.track(examples, f"Converting {task_name} examples to "
                                f"{os.path.basename(output_file)}", len(examples))
    return feature_records.write_records(
        (features_to_tf_example(convert_single_example(index, example, label_list,
                                                       max_seq_length, tokenizer, task_name),
                                regression).SerializeToString()
         for index, example in enumerate(converting)), output_file)


def name_to_features(seq_length, regression):
    """The `tf.io.parse_single_example` spec of the records (also the serving signature's)."""
    return {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def parse_records(serialized, seq_length, regression):
    """A batch of serialized `tf.Example`s → int32 ids (float32 labels for regression)."""
    parsed = tf.io.parse_example(serialized, name_to_features(seq_length, regression))
    return {name: value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
            for name, value in parsed.items()}


def get_or_create_records(processor, data_dir, split, task_name, max_seq_length, tokenizer,
                          cached_dir, vocab_file, do_lower_case, use_spm):
    """The cached records of one split, written first if no up-to-date cache exists.

    Returns (record path, examples); the examples are read either way, for counts and guids.
    """
    data_file = processor.split_path(data_dir, split)
    examples = {"train": processor.get_train_examples, "dev": processor.get_dev_examples,
                "test": processor.get_test_examples}[split](data_dir)
    if not examples:
        # An empty split would train or evaluate on nothing (an endless wait on the iterator).
        raise errors.UserInputError(f"{data_file}: no examples in the {split} file (expected a "
                                 "header line and one example per line)")
    path = cached_record_path(cached_dir, task_name, split, max_seq_length, data_file,
                              vocab_file, do_lower_case, use_spm)
    if tf.io.gfile.exists(path):
        logging.info("reusing %s (%d examples)", path, len(examples))
    else:
        logging.info("writing %d %s examples to %s", len(examples), split, path)
        write_records(examples, processor.get_labels(), max_seq_length, tokenizer, path, task_name)
    return path, examples
