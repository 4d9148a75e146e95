"""The training input pipeline reads exactly what create_pretraining_data writes."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining import create_data
from albert_tf.pretraining import input_pipeline
from albert_tf.pretraining import options as options_lib

SEQ, PRED = 64, 10


@pytest.fixture(scope="module")
def written(real_data, spm_model_file, tmp_path_factory):
    directory = tmp_path_factory.mktemp("records")
    inputs = []
    for i, source in enumerate(real_data["brown"][:2]):
        with open(source, encoding="utf-8") as handle:
            lines = handle.read().split("\n")[:500]
        path = directory / f"in-{i}.txt"
        path.write_text("\n".join(lines), encoding="utf-8")
        inputs.append(str(path))
    output = str(directory / "out" / "train.tfrecord")
    options = options_lib.DataOptions(spm_model_file=spm_model_file, max_seq_length=SEQ,
                                      max_predictions_per_seq=PRED, dupe_factor=1)
    summary = create_data.create_pretraining_data(",".join(inputs), output, options,
                                                  num_workers=1)
    files = [f"{output}-{i:05d}-of-00002" for i in range(2)]
    examples = []
    for path in files:
        for raw in tf.data.TFRecordDataset(path):
            features = tf.train.Example.FromString(raw.numpy()).features.feature
            examples.append({name: np.array(f.int64_list.value or f.float_list.value)
                             for name, f in features.items()})
    return output, files, examples, summary


NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
         "masked_lm_weights", "next_sentence_labels")


def test_evaluation_reads_every_record_in_order(written):
    output, _, examples, _ = written
    batch = 32
    dataset = input_pipeline.pretraining_dataset(
        output + "*", batch_size=batch, max_seq_length=SEQ, max_predictions_per_seq=PRED,
        is_training=False)
    num_batches = len(examples) // batch
    for b, features in enumerate(dataset.take(num_batches + 1)):
        assert sorted(features) == sorted(NAMES)
        for name in NAMES:
            expected_dtype = tf.float32 if name == "masked_lm_weights" else tf.int32
            assert features[name].dtype == expected_dtype
        assert features["input_ids"].shape == (batch, SEQ)
        assert features["masked_lm_ids"].shape == (batch, PRED)
        assert features["next_sentence_labels"].shape == (batch, 1)
        rows = [examples[(b * batch + row) % len(examples)] for row in range(batch)]  # repeats
        for name in NAMES:
            np.testing.assert_array_equal(features[name].numpy(),
                                          np.stack([row[name] for row in rows]))


def test_training_shuffles_and_shards_by_file(written):
    output, files, examples, _ = written
    everything = {tuple(e["input_ids"]) for e in examples}
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=2)
        dataset = input_pipeline.pretraining_dataset(
            ",".join(files), batch_size=4, max_seq_length=SEQ, max_predictions_per_seq=PRED,
            is_training=True, input_context=context, seed=1)
        rows = set()
        for features in dataset.take(30):
            assert features["input_ids"].shape == (4, SEQ)
            rows.update(tuple(r) for r in features["input_ids"].numpy())
        assert rows <= everything
        seen.append(rows)
    assert not seen[0] & seen[1]  # Each pipeline reads its own file.
    first = next(iter(input_pipeline.pretraining_dataset(
        ",".join(files), batch_size=4, max_seq_length=SEQ, max_predictions_per_seq=PRED,
        is_training=True, seed=1)))["input_ids"].numpy()
    in_file_order = np.stack([examples[i]["input_ids"] for i in range(4)])
    assert not np.array_equal(first, in_file_order)


def test_more_pipelines_than_files_shard_records(written):
    _, files, _, _ = written
    rows = []
    for pipeline in range(3):
        context = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=pipeline)
        dataset = input_pipeline.pretraining_dataset(
            files[0], batch_size=2, max_seq_length=SEQ, max_predictions_per_seq=PRED,
            is_training=False, input_context=context)
        rows.append({tuple(r) for f in dataset.take(5) for r in f["input_ids"].numpy()})
    assert not (rows[0] & rows[1]) and not (rows[1] & rows[2])


def test_length_mismatch_names_the_value_to_pass(written, tmp_path):
    output, files, _, _ = written
    with pytest.raises(ValueError, match=r"masked_lm_positions has length 10 but "
                                         r"--max_predictions_per_seq=20; pass "
                                         r"--max_predictions_per_seq=10"):
        input_pipeline.pretraining_dataset(files[0], batch_size=2, max_seq_length=SEQ,
                                           max_predictions_per_seq=20, is_training=True)
    with pytest.raises(ValueError, match=r"input_ids has length 64 but --max_seq_length=128"):
        input_pipeline.pretraining_dataset(files[0], batch_size=2, max_seq_length=128,
                                           max_predictions_per_seq=PRED, is_training=True)
    with pytest.raises(ValueError, match="matched no file"):
        input_pipeline.pretraining_dataset(os.path.join(tmp_path, "none-*"), batch_size=2,
                                           max_seq_length=SEQ, max_predictions_per_seq=PRED,
                                           is_training=True)
