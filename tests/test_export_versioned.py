"""Version directories of exports: two exports finishing in the same second never collide."""

import os

import tensorflow as tf

from albert_tf.export import versioned


def _staged(directory, name, marker):
    path = os.path.join(directory, name)
    os.makedirs(path)
    with open(os.path.join(path, "saved_model.pb"), "w", encoding="utf-8") as writer:
        writer.write(marker)
    return path


def _marker(path):
    with open(os.path.join(path, "saved_model.pb"), encoding="utf-8") as reader:
        return reader.read()


def test_same_second_exports_get_distinct_versions(tmp_path, monkeypatch):
    directory = str(tmp_path)
    first = versioned._rename_to_new_version(_staged(directory, ".tmp-a", "first"), directory)
    # The second export computed its version before the first one's rename landed:
    taken = int(os.path.basename(first))
    answers = iter([taken, taken + 1])
    monkeypatch.setattr(versioned, "next_version", lambda _: next(answers))
    second = versioned._rename_to_new_version(_staged(directory, ".tmp-b", "second"), directory)
    assert int(os.path.basename(second)) == taken + 1
    assert (_marker(first), _marker(second)) == ("first", "second")  # nothing overwritten
    assert sorted(tf.io.gfile.listdir(directory)) == sorted([str(taken), str(taken + 1)])


def test_next_version_follows_existing_versions(tmp_path):
    os.makedirs(tmp_path / "9999999999")
    assert versioned.next_version(str(tmp_path)) == 10000000000
