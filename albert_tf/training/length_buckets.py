"""Trim padded batches to their longest row, rounded up to one of a few bucket lengths.

Fine-tuning records are padded to `max_seq_length`, the original's fixed TPU shapes, but real
inputs are short: most of a padded batch is padding, and attention costs grow with its square.
Padding positions change nothing in the outputs: the attention mask adds -10000 to their
scores, whose exponential underflows to exactly 0 in float32, and the heads read only [CLS] and
real tokens. So the trailing columns that are padding in every row can be cut off; the result
differs from the padded run's by float rounding only.

In evaluation and prediction a batch keeps its examples and their order, so the order of
predictions is that of the padded run. In training, `group_batches` also fills each batch with
examples of one bucket (after the shuffle, as Hugging Face's `group_by_length`), so a batch of
short sentences runs at 16 or 32 positions instead of at the length of the longest sentence
that happened to be drawn with them. Each batch still holds `batch_size` examples, so the global
batch, the loss weighting and gradient accumulation are those of the padded run; only which
examples share a batch changes. Cutting to a few bucket lengths rather than to the exact longest
row keeps the number of distinct shapes small: with XLA or on TPU each shape is one compiled
program.
"""

import tensorflow as tf

from albert_tf import errors
from albert_tf.training import strategy as strategy_lib

SMALLEST_BUCKET = 16


def default_buckets(max_seq_length):
    """Powers of two from 16 below `max_seq_length`, then `max_seq_length` itself."""
    buckets = []
    length = SMALLEST_BUCKET
    while length < max_seq_length:
        buckets.append(length)
        length *= 2
    return tuple(buckets) + (max_seq_length,)


def parse_buckets(text, max_seq_length, flag_name="length_buckets"):
    """The value of a `--length_buckets` flag: `auto` (default_buckets), `off` (None: pad to
    max_seq_length as the original) or ascending lengths such as `32,64,128`; the largest is
    raised to `max_seq_length` if it is below it."""
    text = (text or "auto").strip().lower()
    if text == "auto":
        return default_buckets(max_seq_length)
    if text in ("off", "none", "false", "0"):
        return None
    try:
        lengths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise errors.UserInputError(f"--{flag_name}={text}: expected auto, off, or ascending "
                                 "integers such as 32,64,128") from None
    if not lengths or any(n <= 0 for n in lengths) or lengths != sorted(set(lengths)):
        raise errors.UserInputError(f"--{flag_name}={text}: expected ascending positive lengths")
    if lengths[-1] > max_seq_length:
        raise errors.UserInputError(f"--{flag_name}={text}: {lengths[-1]} exceeds "
                                 f"--max_seq_length={max_seq_length}")
    if lengths[-1] < max_seq_length:
        lengths.append(max_seq_length)
    return tuple(lengths)


def skips_padding(buckets, strategy):
    """Whether the encoder should also skip the padding inside each batch (`modeling.packing`):
    whenever batches are cut to buckets, except on TPU, which needs fixed shapes."""
    return buckets is not None and not strategy_lib.is_tpu(strategy)


def sequence_keys(element_spec, max_seq_length):
    """The features whose last dimension is the sequence: those of static size max_seq_length."""
    return tuple(sorted(key for key, spec in element_spec.items()
                        if spec.shape.rank and spec.shape[-1] == max_seq_length))


def batch_length(input_mask):
    """Length that holds every real token of the batch: the last non-zero mask position + 1."""
    mask = tf.reshape(tf.cast(input_mask, tf.bool), [-1, tf.shape(input_mask)[-1]])
    positions = tf.range(1, tf.shape(mask)[-1] + 1)
    return tf.reduce_max(tf.where(mask, positions[tf.newaxis, :], 0))


def bucket_for(length, buckets):
    """The smallest bucket >= length (buckets ascending, the last one the maximum)."""
    table = tf.constant(buckets, tf.int32)
    index = tf.searchsorted(table, tf.reshape(tf.cast(length, tf.int32), [1]), side="left")[0]
    return table[tf.minimum(index, len(buckets) - 1)]


def trim_batch(features, buckets, keys, mask_key="input_mask"):
    """`features` (a batch padded to the last bucket) cut to its bucket length on `keys`."""
    length = bucket_for(batch_length(features[mask_key]), buckets)
    return {key: (value[..., :length] if key in keys else value)
            for key, value in features.items()}


def trim_dataset(dataset, buckets, max_seq_length, mask_key="input_mask"):
    """Maps `trim_batch` over a batched dataset of feature dicts padded to max_seq_length.

    `buckets` None returns the dataset unchanged (the original's fixed shapes)."""
    if buckets is None:
        return dataset
    if buckets[-1] != max_seq_length:
        raise ValueError(f"the last bucket {buckets[-1]} must be max_seq_length "
                         f"{max_seq_length}")
    keys = sequence_keys(dataset.element_spec, max_seq_length)
    if mask_key not in keys:
        raise ValueError(f"no {mask_key!r} of length {max_seq_length} among the features "
                         f"{sorted(dataset.element_spec)}")
    return dataset.map(lambda features: trim_batch(features, buckets, keys, mask_key),
                       num_parallel_calls=tf.data.AUTOTUNE)


def bucket_index(features, buckets, mask_key="input_mask"):
    """The index (int64) of the smallest bucket that holds every real token of one example."""
    table = tf.constant(buckets, tf.int32)
    length = tf.reshape(batch_length(features[mask_key]), [1])
    index = tf.searchsorted(table, length, side="left")[0]
    return tf.cast(tf.minimum(index, len(buckets) - 1), tf.int64)


def group_batches(examples, batch_size, buckets, max_seq_length, mask_key="input_mask"):
    """Training batches of an endless stream of parsed examples (each padded to max_seq_length).

    With `buckets`, every batch holds `batch_size` examples of one bucket and is cut to that
    bucket's length; `buckets` None gives the original's plain fixed-length batches."""
    if buckets is None:
        return examples.batch(batch_size, drop_remainder=True)
    grouped = examples.group_by_window(
        key_func=lambda features: bucket_index(features, buckets, mask_key),
        reduce_func=lambda _, window: window.batch(batch_size, drop_remainder=True),
        window_size=batch_size)
    return trim_dataset(grouped, buckets, max_seq_length, mask_key)
