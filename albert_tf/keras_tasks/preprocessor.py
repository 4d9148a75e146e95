"""`AlbertTextClassifierPreprocessor`: raw strings (or pairs) -> the encoder's id inputs.

The scripts' tokenizer in the graph (`text.tf_tokenization.InGraphTokenizer`: the same ids as
the Python `FullTokenizer`, SentencePiece on tensorflow-text) and their packing,
`[CLS] a [SEP] (b [SEP])` truncated to max_seq_length as the original, so a model fits and
predicts on the ids `run_classifier.py` would have fed it and the export's `text` signature
feeds it. A batch is cut to its longest row rounded up to a length bucket (the runs' default
`--length_buckets=auto`), and training batches hold examples of one bucket (`training_batches`),
as `run_classifier.py` batches them.
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf import errors
from albert_tf.keras_tasks import presets
from albert_tf.text import tf_tokenization
from albert_tf.training import length_buckets

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")
DEFAULT_MAX_SEQ_LENGTH = 128


class AlbertTextClassifierPreprocessor(keras.layers.Layer):
    """`preprocessor(texts)` or `preprocessor((texts_a, texts_b))` -> {input_ids, input_mask,
    segment_ids} int32 [B, L], L a length bucket <= max_seq_length."""

    def __init__(self, spm_model_file, max_seq_length=128, do_lower_case=True, **kwargs):
        super().__init__(trainable=False, **kwargs)
        self.spm_model_file = spm_model_file
        self.max_seq_length = int(max_seq_length)
        self.do_lower_case = bool(do_lower_case)
        self.tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, do_lower_case)
        self.batching = length_buckets.Batching.auto(self.max_seq_length)
        self.built = True

    @classmethod
    def from_preset(cls, preset, max_seq_length=None, do_lower_case=None):
        """The preprocessor of a `presets.Preset`: max_seq_length and casing as given, else its
        task file's, else 128 (at most the config's max_position_embeddings) and lower case;
        checked against the config."""
        config_source = f"{preset.folder}/{presets.CONFIG_NAME}"
        max_seq_length = int(max_seq_length or preset.task.get("max_seq_length")
                             or min(DEFAULT_MAX_SEQ_LENGTH, preset.config.max_position_embeddings))
        preset.config.check_max_seq_length(max_seq_length, config_source)
        if do_lower_case is None:
            do_lower_case = preset.task.get("do_lower_case", True)
        preprocessor = cls(preset.spm_model_file, max_seq_length, do_lower_case)
        preset.config.check_vocabulary(preprocessor.tokenizer.vocab_size, preset.spm_model_file,
                                       config_source)
        return preprocessor

    def pad(self, inputs):
        """The ids of a batch of strings or pairs, padded to max_seq_length."""
        text_a, text_b = split_pair(inputs)
        segments = [self.tokenizer.tokenize(text_a)]
        if text_b is not None:
            segments.append(self.tokenizer.tokenize(text_b))
        packed = tf_tokenization.pack_inputs(segments, self.max_seq_length,
                                             self.tokenizer.cls_id, self.tokenizer.sep_id)
        return {name: tf.cast(packed[name], tf.int32) for name in MODEL_INPUTS}

    def trim(self, features):
        """A padded batch cut to its length bucket."""
        return self.batching.trim_batch(features, MODEL_INPUTS)

    def call(self, inputs):
        return self.trim(self.pad(inputs))

    def get_config(self):
        return {**super().get_config(), "spm_model_file": self.spm_model_file,
                "max_seq_length": self.max_seq_length, "do_lower_case": self.do_lower_case}

    # ------------------------------------------------------------------------------- datasets

    def tokenize_all(self, texts, chunk=256):
        """{input_ids, input_mask, segment_ids} int32 numpy [N, L] of every text (or pair), L
        the bucket of the longest: the whole set tokenized once, in the graph, in parallel
        chunks (what `run_classifier.py` caches as records)."""
        chunks = tf.data.Dataset.from_tensor_slices((texts,)).batch(chunk).map(
            lambda x: self.pad(x), num_parallel_calls=tf.data.AUTOTUNE)
        parts = [{name: value.numpy() for name, value in features.items()} for features in chunks]
        if not parts:
            raise errors.UserInputError("no texts to tokenize")
        features = {name: np.concatenate([part[name] for part in parts]) for name in MODEL_INPUTS}
        longest = int(features["input_mask"].sum(axis=1).max())
        length = self.batching.buckets[self.bucket_indices([longest])[0]]
        return {name: value[:, :length] for name, value in features.items()}

    def bucket_indices(self, lengths):
        """The index of the length bucket of each sequence length."""
        buckets = np.asarray(self.batching.buckets)
        return np.minimum(np.searchsorted(buckets, np.asarray(lengths)), len(buckets) - 1)

    def training_batches(self, texts, labels, batch_size, shuffle=True, seed=None):
        """One epoch of (ids, labels) batches, each of examples of one length bucket cut to
        that bucket, every example once (a bucket's last batch may be short), shuffled anew
        each epoch; the texts are tokenized once, up front (`tokenize_all`)."""
        features = self.tokenize_all(texts)
        buckets = self.bucket_indices(features["input_mask"].sum(axis=1)).astype(np.int64)
        counts = np.bincount(buckets)
        num_batches = int(sum(-(-int(count) // batch_size) for count in counts))
        dataset = tf.data.Dataset.from_tensor_slices((features, buckets, labels))
        if shuffle:
            dataset = dataset.shuffle(len(buckets), seed=seed, reshuffle_each_iteration=True)
        grouped = dataset.group_by_window(
            key_func=lambda x, bucket, y: bucket,
            reduce_func=lambda _, window: window.batch(batch_size), window_size=batch_size)
        batches = grouped.map(lambda x, bucket, y: (self.trim(x), y),
                              num_parallel_calls=tf.data.AUTOTUNE)
        return batches.apply(tf.data.experimental.assert_cardinality(num_batches)).prefetch(
            tf.data.AUTOTUNE)

    def batches(self, texts, labels=None, batch_size=32):
        """Batches of ids (and labels) in input order, for evaluation and prediction."""
        if labels is None:
            dataset = tf.data.Dataset.from_tensor_slices((texts,)).batch(batch_size).map(
                lambda x: (self.trim(self.pad(x)),), num_parallel_calls=tf.data.AUTOTUNE)
        else:
            dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(batch_size).map(
                lambda x, y: (self.trim(self.pad(x)), y), num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)


def split_pair(inputs):
    """(text_a, text_b or None) of a batch of strings or of a pair of such batches."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
        return tf.convert_to_tensor(inputs[0]), tf.convert_to_tensor(inputs[1])
    return tf.convert_to_tensor(inputs), None


def is_text(inputs):
    """Whether `inputs` are raw strings (a batch of them, or a pair of batches) rather than ids
    or a dataset."""
    if isinstance(inputs, (str, bytes)):
        return True
    if isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
        return inputs.dtype == tf.string
    if isinstance(inputs, np.ndarray):
        return inputs.dtype.kind in ("U", "S") or (
            inputs.dtype.kind == "O" and inputs.size > 0
            and isinstance(inputs.flat[0], (str, bytes)))
    if isinstance(inputs, (tuple, list)) and inputs:
        if len(inputs) == 2 and not isinstance(inputs[0], (str, bytes)):
            return is_text(inputs[0])
        return isinstance(inputs[0], (str, bytes))
    return False


def as_text_arrays(inputs, what="x"):
    """Strings, a list of strings or a pair of lists -> a [N] string array or a pair of them,
    refusing anything else with a message naming `what`."""
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2 and not isinstance(inputs[0], str):
        first, second = (np.asarray(part, dtype=object) for part in inputs)
        if first.shape != second.shape or first.ndim != 1:
            raise errors.UserInputError(f"{what}: a pair of text lists must be two lists of one "
                                        f"length, got shapes {first.shape} and {second.shape}")
        _check_strings(first, what)
        _check_strings(second, what)
        return first.astype(str), second.astype(str)
    array = np.asarray(inputs, dtype=object)
    if array.ndim != 1:
        raise errors.UserInputError(f"{what}: expected a list of strings or a pair of lists "
                                    f"(texts_a, texts_b), got an array of shape {array.shape}")
    _check_strings(array, what)
    return array.astype(str)


def _check_strings(array, what):
    for index, value in enumerate(array):
        if not isinstance(value, (str, bytes)):
            raise errors.UserInputError(f"{what}[{index}]: expected a string, got "
                                        f"{type(value).__name__} {value!r}")
