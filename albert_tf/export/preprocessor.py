"""The raw-text tokenizer as a SavedModel of its own (the TF Hub / Model Garden encoder +
preprocessor convention), for a model exported without its `text` signature.

Its one signature, `serving_default`, takes string `text_a`, `text_b` [B] and returns int32
`input_ids`, `input_mask`, `segment_ids` [B, L]: the SentencePiece pieces packed as
`[CLS] a [SEP] (b [SEP])` with the original truncation to max_seq_length, L the longest row
rounded up to a length bucket, exactly what the combined model's `text` signature feeds its
encoder. Feed them to the model's `ids` signature. Only this SavedModel needs tensorflow_text.
"""

import keras
import tensorflow as tf

from albert_tf.text import tf_tokenization
from albert_tf.export import versioned
from albert_tf.training import length_buckets

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")


class TextPreprocessor:
    """Tokenizes and packs raw text for a classifier of `max_seq_length`."""

    def __init__(self, tokenizer, max_seq_length, batching=None):
        """`batching`: the run's served `length_buckets.Batching` (default: `auto`)."""
        self.tokenizer, self.max_seq_length = tokenizer, max_seq_length
        self.batching = batching or length_buckets.Batching.auto(max_seq_length)

    def pack(self, text_a, text_b):
        packed = tf_tokenization.pack_inputs(
            [self.tokenizer.tokenize(self.tokenizer.leading_words(text, self.max_seq_length))
             for text in (text_a, text_b)],
            self.max_seq_length, self.tokenizer.cls_id, self.tokenizer.sep_id)
        return self.batching.trim_batch(
            {name: tf.cast(packed[name], tf.int32) for name in MODEL_INPUTS}, MODEL_INPUTS)

    def archive(self):
        archive = keras.export.ExportArchive()
        archive.track(self.tokenizer)
        archive.add_endpoint("serving_default", self.pack, input_signature=[
            tf.TensorSpec([None], tf.string, name="text_a"),
            tf.TensorSpec([None], tf.string, name="text_b")])
        return archive


def write_preprocessor(spm_model_file, do_lower_case, max_seq_length, export_dir,
                       batching=None):
    """Writes `<export_dir>/<version>/` atomically; returns that path. `batching`: the run's
    served `length_buckets.Batching`, as the model's (default: `auto`)."""
    tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, do_lower_case)
    return versioned.write_archive(
        TextPreprocessor(tokenizer, max_seq_length, batching).archive(), export_dir)
