"""The shared data preparation: fingerprints, cache names, the atomic record writer."""

import os

import pytest
import tensorflow as tf

from albert_tf.files import feature_records


def test_fingerprint_follows_the_bytes_and_skips_missing_paths(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"a\nb\n")
    first = feature_records.file_fingerprint(str(vocab))
    assert len(first) == 12 and first == feature_records.file_fingerprint(None, str(vocab))
    vocab.write_bytes(b"a\nc\n")
    assert feature_records.file_fingerprint(str(vocab)) != first
    other = tmp_path / "other.txt"
    other.write_bytes(b"x")
    assert (feature_records.file_fingerprint(str(vocab), str(other))
            != feature_records.file_fingerprint(str(other), str(vocab)))


def test_keyed_path_keeps_a_record_suffix_and_adds_one_otherwise():
    assert feature_records.keyed_path(None, "/out", "k1") == "/out/k1.tf_record"
    assert feature_records.keyed_path("/c/train.tfrecord", "/out", "k1") == "/c/train.k1.tfrecord"
    assert feature_records.keyed_path("/c/train.json", "/out", "k1") == "/c/train.json.k1.tf_record"


def test_writer_counts_and_leaves_nothing_half_written(tmp_path):
    path = str(tmp_path / "records.tf_record")
    records = [feature_records.example_bytes({"x": feature_records.int64_feature([i])})
               for i in range(3)]
    assert feature_records.write_records(iter(records), path) == 3
    assert list(tf.data.TFRecordDataset(path).as_numpy_iterator()) == records

    def broken():
        yield records[0]
        raise RuntimeError("killed mid-way")

    broken_path = str(tmp_path / "broken.tf_record")
    with pytest.raises(RuntimeError, match="killed mid-way"):
        feature_records.write_records(broken(), broken_path)
    assert os.listdir(tmp_path) == ["records.tf_record"]  # no final file, no temporary left
