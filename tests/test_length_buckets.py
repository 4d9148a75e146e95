"""Length buckets: trimmed batches keep examples, order and outputs; the update equals the
padded run's up to float rounding."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import errors
from albert_tf.modeling import classifier, encoder
from albert_tf.training import length_buckets
from tests.conftest import copy_weights


def test_default_buckets():
    assert length_buckets.default_buckets(128) == (16, 32, 64, 128)
    assert length_buckets.default_buckets(512) == (16, 32, 64, 128, 256, 512)
    assert length_buckets.default_buckets(100) == (16, 32, 64, 100)
    assert length_buckets.default_buckets(16) == (16,)


@pytest.mark.parametrize("text, expected", [
    ("auto", (16, 32, 64)), ("", (16, 32, 64)), ("off", None), ("24,48", (24, 48, 64)),
    ("32,64", (32, 64))])
def test_parse_buckets(text, expected):
    assert length_buckets.parse_buckets(text, 64) == expected


@pytest.mark.parametrize("text, message", [
    ("32,x", "--length_buckets=32,x: expected auto, off"), ("64,32", "ascending"),
    ("0,32", "ascending"), ("32,128", "128 exceeds --max_seq_length=64")])
def test_parse_buckets_errors_name_the_flag(text, message):
    with pytest.raises(errors.UserInputError, match=message):
        length_buckets.parse_buckets(text, 64)



def test_batching_is_decided_once_from_the_flag_the_strategy_and_the_model(monkeypatch):
    strategy = tf.distribute.get_strategy()
    auto = length_buckets.Batching.resolve("auto", 64, strategy)
    assert auto == length_buckets.Batching((16, 32, 64), skip_padding=True)
    assert auto.encoder_options == {"use_one_hot_embeddings": False, "skip_padding": True}
    assert length_buckets.Batching.resolve("off", 64, strategy) == length_buckets.PADDED
    # A model that scores padding positions pads fully; asking for buckets names the reason.
    why = "the heads score padding positions"
    assert length_buckets.Batching.resolve("auto", 64, strategy, why) == length_buckets.PADDED
    with pytest.raises(errors.UserInputError, match=f"--length_buckets=32,64: {why}"):
        length_buckets.Batching.resolve("32,64", 64, strategy, why)
    monkeypatch.setattr(length_buckets.strategy_lib, "is_tpu", lambda _: True)
    tpu = length_buckets.Batching.resolve("auto", 64, strategy)
    assert tpu == length_buckets.Batching(None, skip_padding=False, one_hot_embeddings=True)
    cut_on_tpu = length_buckets.Batching.resolve("32,64", 64, strategy)
    # The export of a run is served on CPUs or GPUs: same buckets, padding skipped, no one-hot.
    assert cut_on_tpu.served() == length_buckets.Batching((32, 64), skip_padding=True)
    assert tpu.served() == length_buckets.PADDED


def _batch(lengths, max_seq_length=64, choices=None):
    rng = np.random.default_rng(0)
    shape = (len(lengths),) + ((choices,) if choices else ()) + (max_seq_length,)
    mask = np.zeros(shape, np.int32)
    for row, length in enumerate(lengths):
        mask[row, ..., :length] = 1
    ids = np.where(mask == 1, rng.integers(5, 99, shape), 0).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros(shape, np.int32),
            "label_ids": np.arange(len(lengths), dtype=np.int32)}


@pytest.mark.parametrize("lengths, bucket", [([3, 9], 16), ([16], 16), ([17, 2], 32),
                                             ([33, 64], 64), ([40], 64)])
def test_trim_to_smallest_bucket_holding_every_row(lengths, bucket):
    batch = _batch(lengths)
    dataset = tf.data.Dataset.from_tensors(batch)
    trimmed = next(iter(length_buckets.trim_dataset(dataset, (16, 32, 64), 64)))
    assert trimmed["input_ids"].shape == (len(lengths), bucket)
    np.testing.assert_array_equal(trimmed["input_ids"], batch["input_ids"][:, :bucket])
    np.testing.assert_array_equal(trimmed["label_ids"], batch["label_ids"])  # not a sequence


def test_multiple_choice_batches_trim_the_last_axis():
    batch = _batch([5, 20], choices=4)
    trimmed = next(iter(length_buckets.trim_dataset(
        tf.data.Dataset.from_tensors(batch), (16, 32, 64), 64)))
    assert trimmed["input_mask"].shape == (2, 4, 32)
    assert int(tf.reduce_sum(trimmed["input_mask"])) == int(batch["input_mask"].sum())


def test_off_leaves_the_dataset_alone():
    dataset = tf.data.Dataset.from_tensors(_batch([3]))
    assert length_buckets.trim_dataset(dataset, None, 64) is dataset


def test_unpadded_mask_positions_count():
    """A mask with a hole (never produced, but possible in user records) keeps its last token."""
    mask = np.array([[1, 1, 0, 0, 1, 0, 0, 0]])
    assert int(length_buckets.batch_length(mask)) == 5


def _logits_and_gradients(model, features, labels):
    inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
    with tf.GradientTape() as tape:
        logits = model(inputs, training=False)["logits"]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    return logits, tape.gradient(loss, model.trainable_variables)


def _assert_same_logits_and_gradients(model, cut, padded, labels, cut_model=None):
    """`cut` (a trimmed batch, run by `cut_model`, default `model`) and `padded` (the same
    examples at full length, run by `model`) agree ≤ 1e-5."""
    cut_logits, cut_gradients = _logits_and_gradients(cut_model or model, cut, labels)
    padded_logits, padded_gradients = _logits_and_gradients(model, padded, labels)
    np.testing.assert_allclose(cut_logits, padded_logits, atol=1e-5)
    for cut_gradient, padded_gradient, variable in zip(cut_gradients, padded_gradients,
                                                       model.trainable_variables):
        np.testing.assert_allclose(tf.convert_to_tensor(cut_gradient),
                                   tf.convert_to_tensor(padded_gradient), atol=1e-5,
                                   err_msg=variable.path)


def _skipping_copy(model, config):
    """A classifier with `model`'s weights whose encoder skips padding (`modeling.packing`)."""
    copy = classifier.AlbertClassifier(encoder.AlbertEncoder(config, skip_padding=True), num_labels=3, dropout_rate=0.0)
    copy_weights(model, copy)
    return copy


def test_logits_and_update_equal_the_padded_run(tiny_config):
    """The same batch, padded to 64 and trimmed to its bucket: logits and gradients agree."""
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(tiny_config), num_labels=3, dropout_rate=0.0)
    batch = _batch([7, 30, 12, 3])
    labels = tf.constant([0, 2, 1, 1])
    trimmed = next(iter(length_buckets.trim_dataset(
        tf.data.Dataset.from_tensors(batch), (16, 32, 64), 64)))
    assert trimmed["input_ids"].shape[1] == 32

    _assert_same_logits_and_gradients(model, trimmed, batch, labels)
    _assert_same_logits_and_gradients(model, trimmed, batch, labels,
                                      cut_model=_skipping_copy(model, tiny_config))


def _examples(count, seed=1):
    """`count` single examples padded to 64, of random real lengths; label_ids = the index."""
    lengths = np.random.default_rng(seed).integers(1, 65, count)
    batch = _batch(list(lengths))
    return batch, lengths, tf.data.Dataset.from_tensor_slices(batch)


def test_grouped_training_batches_are_full_and_of_one_bucket():
    batch, lengths, examples = _examples(60)
    buckets = (16, 32, 64)
    seen = []
    for grouped in length_buckets.group_batches(examples, 4, buckets, 64):
        bucket = grouped["input_ids"].shape[1]
        assert grouped["input_ids"].shape == (4, bucket) and bucket in buckets
        lower = buckets[buckets.index(bucket) - 1] if bucket != buckets[0] else 0
        for row, index in enumerate(grouped["label_ids"].numpy()):
            assert lower < lengths[index] <= bucket
            np.testing.assert_array_equal(grouped["input_ids"][row], batch["input_ids"][index, :bucket])
        seen.extend(grouped["label_ids"].numpy())
    assert len(seen) == len(set(seen))  # every example at most once
    assert len(seen) > 60 - len(buckets) * 4  # only each bucket's last partial batch is left


def test_grouped_batch_update_equals_the_same_examples_padded(tiny_config):
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(tiny_config), num_labels=3, dropout_rate=0.0)
    batch, _, examples = _examples(40, seed=2)
    grouped = next(iter(length_buckets.group_batches(examples, 4, (16, 32, 64), 64)))
    padded = {key: tf.gather(value, grouped["label_ids"]) for key, value in batch.items()}
    labels = grouped["label_ids"] % 3
    _assert_same_logits_and_gradients(model, grouped, padded, labels)
    _assert_same_logits_and_gradients(model, grouped, padded, labels,
                                      cut_model=_skipping_copy(model, tiny_config))


def test_off_batches_in_order_at_full_length():
    _, _, examples = _examples(9)
    batches = list(length_buckets.group_batches(examples, 4, None, 64))
    assert [b["input_ids"].shape for b in batches] == [(4, 64), (4, 64)]
    assert np.concatenate([b["label_ids"] for b in batches]).tolist() == list(range(8))


def test_the_export_follows_the_runs_batching(spm_model_file):
    """The raw-text preprocessor (as the classifier's `text` signature) cuts to the run's
    buckets, and pads to max_seq_length after --length_buckets=off."""
    from albert_tf.export import preprocessor
    from albert_tf.text import tf_tokenization
    tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, True)
    text = (tf.constant(["a short sentence"]), tf.constant([""]))
    shapes = {name: preprocessor.TextPreprocessor(tokenizer, 64, batching).pack(*text)[
        "input_ids"].shape[1] for name, batching in (
            ("default", None), ("run", length_buckets.Batching.cut((32, 64))),
            ("off", length_buckets.PADDED))}
    assert shapes == {"default": 16, "run": 32, "off": 64}
