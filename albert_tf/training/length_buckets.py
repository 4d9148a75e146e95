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

A run decides its batching once, `Batching.resolve(--length_buckets, max_seq_length,
strategy)`, and hands the one value to the job, the task (its datasets), the model (`encoder
options`) and the export, so none of them asks the flag or the strategy again.
"""

import dataclasses

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


@dataclasses.dataclass(frozen=True)
class Batching:
    """How a run's batches are shaped, decided once.

    `buckets`: ascending lengths ending at max_seq_length that batches are cut to, None to pad
    every batch to max_seq_length (the original). `skip_padding`: the encoder also skips the
    padding inside each batch (`modeling.packing`). `one_hot_embeddings`: the TPU's one-hot
    embedding lookup (the original turns it on with --use_tpu).
    """

    buckets: tuple = None
    skip_padding: bool = False
    one_hot_embeddings: bool = False

    @classmethod
    def resolve(cls, text, max_seq_length, strategy, keep_padding=None):
        """The batching a --length_buckets value asks for under `strategy`: `auto` is off on
        TPU (fixed shapes), and padding is skipped inside batches wherever they are cut, except
        on TPU. `keep_padding`: a reason the model needs full padding (SQuAD v1.1's heads score
        padding positions); then only `auto` and `off` are accepted, and both pad."""
        tpu = strategy_lib.is_tpu(strategy)
        if keep_padding:
            if text.strip().lower() not in ("auto", "off", "none", "false", "0"):
                raise errors.UserInputError(f"--length_buckets={text}: {keep_padding}")
            return cls(one_hot_embeddings=tpu)
        buckets = None if text.strip().lower() == "auto" and tpu else parse_buckets(
            text, max_seq_length)
        return cls(buckets, skip_padding=buckets is not None and not tpu,
                   one_hot_embeddings=tpu)

    @classmethod
    def cut(cls, buckets):
        """Batches cut to `buckets` (None: padded) with padding skipped inside them, off TPU."""
        return cls(None if buckets is None else tuple(buckets), skip_padding=buckets is not None)

    @classmethod
    def auto(cls, max_seq_length):
        """`--length_buckets=auto` off TPU: the default of an export built outside a run."""
        return cls.cut(default_buckets(max_seq_length))

    def served(self):
        """The run's batching for its export, served on CPUs or GPUs: the same buckets, padding
        skipped wherever batches are cut, no TPU embedding lookup."""
        return Batching.cut(self.buckets)

    def lengths(self, max_seq_length):
        """Every sequence length a batch can have: the buckets, or max_seq_length alone."""
        return self.buckets or (max_seq_length,)

    @property
    def encoder_options(self):
        """The keyword arguments every ALBERT model takes for its encoder."""
        return {"use_one_hot_embeddings": self.one_hot_embeddings,
                "skip_padding": self.skip_padding}

    def trim(self, dataset, max_seq_length, mask_key="input_mask"):
        """`trim_dataset` of batches padded to max_seq_length with these buckets."""
        return trim_dataset(dataset, self.buckets, max_seq_length, mask_key)

    def trim_batch(self, features, keys, mask_key="input_mask"):
        """One batch cut to its bucket length on `keys` (unchanged without buckets)."""
        if self.buckets is None:
            return features
        return trim_batch(features, self.buckets, keys, mask_key)

    def train_batches(self, examples, batch_size, max_seq_length, mask_key="input_mask"):
        """`group_batches` of an endless stream of examples with these buckets."""
        return group_batches(examples, batch_size, self.buckets, max_seq_length, mask_key)


PADDED = Batching()  # every batch padded to max_seq_length, as the original


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
