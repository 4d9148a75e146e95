"""What every fine-tuning task's feature cache shares: tf.train.Feature helpers and cache names.

A cache file's name carries everything its contents depend on (task, split, sequence length,
casing, and fingerprints of the vocabulary and of the data file), so a changed flag or an edited
file never reuses a stale cache.
"""

import hashlib
import os

import tensorflow as tf


def int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def file_digest(path, length=10):
    """The first `length` hex digits of the SHA-256 of a file's contents."""
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as reader:
        for chunk in iter(lambda: reader.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:length]


def cached_record_path(cached_dir, task_name, split, max_seq_length, data_file,
                       vocab_file, do_lower_case, use_spm):
    """`<task>_<split>_seq<S>_<uncased|cased>_<spm|wordpiece>-<vocab hash>_data-<data hash>.tf_record`.

    The hashes are of the vocabulary file's and the source file's contents, so editing either, or
    changing --max_seq_length or --do_lower_case, selects a different file.
    """
    casing = "uncased" if do_lower_case else "cased"
    vocabulary = f"{'spm' if use_spm else 'wordpiece'}-{file_digest(vocab_file)}"
    name = (f"{task_name.lower()}_{split}_seq{max_seq_length}_{casing}_{vocabulary}"
            f"_data-{file_digest(data_file)}.tf_record")
    return os.path.join(cached_dir, name)
