"""The data preparation every fine-tuning task shares: tf.train.Feature helpers, file
fingerprints, cache file names and one atomic TFRecord writer.

A cache file's name carries everything its contents depend on (task, split, lengths, casing,
and fingerprints of the vocabulary and of the data file), so a changed flag or an edited file
never reuses a stale cache; the task packages build their keys from these pieces. Records are
written to a temporary name and renamed when complete, so a killed run leaves no cache that
looks finished.
"""

import hashlib
import os

import tensorflow as tf

from albert_tf.files import io_utils

RECORD_SUFFIXES = (".tf_record", ".tfrecord", ".tfrecords", ".record")
FINGERPRINT_LENGTH = 12


def int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def bytes_feature(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def example_bytes(fields):
    """One serialized `tf.train.Example` of `{name: tf.train.Feature}`."""
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def file_fingerprint(*paths):
    """The first 12 hex digits of the SHA-256 of the files' bytes, in order (None skipped)."""
    digest = hashlib.sha256()
    for path in paths:
        if path:
            with tf.io.gfile.GFile(path, "rb") as reader:
                for block in iter(lambda: reader.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:FINGERPRINT_LENGTH]


def keyed_path(requested_path, default_dir, key):
    """`<default_dir>/<key>.tf_record`, or for a path the user asked for, `<stem>.<key><suffix>`
    beside it (`--train_file=/c/train.tf_record` → `/c/train.<key>.tf_record`)."""
    if not requested_path:
        return os.path.join(default_dir, key + ".tf_record")
    stem, suffix = os.path.splitext(requested_path)
    if suffix not in RECORD_SUFFIXES:
        stem, suffix = requested_path, ".tf_record"
    return f"{stem}.{key}{suffix}"


def cached_record_path(cached_dir, task_name, split, max_seq_length, data_file,
                       vocab_file, do_lower_case, use_spm):
    """`<task>_<split>_seq<S>_<uncased|cased>_<spm|wordpiece>-<vocab hash>_data-<data hash>.tf_record`.

    The hashes are of the vocabulary file's and the source file's contents, so editing either, or
    changing --max_seq_length or --do_lower_case, selects a different file.
    """
    casing = "uncased" if do_lower_case else "cased"
    vocabulary = f"{'spm' if use_spm else 'wordpiece'}-{file_fingerprint(vocab_file)}"
    name = (f"{task_name.lower()}_{split}_seq{max_seq_length}_{casing}_{vocabulary}"
            f"_data-{file_fingerprint(data_file)}.tf_record")
    return os.path.join(cached_dir, name)


def write_records(serialized_records, path):
    """Writes the serialized records to `path` atomically; returns how many were written."""
    count = 0
    with io_utils.atomic_path(path) as temp:
        with tf.io.TFRecordWriter(temp) as writer:
            for record in serialized_records:
                writer.write(record)
                count += 1
    return count
