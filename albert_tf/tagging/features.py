"""Tagging features: one record per sentence, each word's label on its first piece.

`[CLS] pieces of word 1 … pieces of word n [SEP]`, padded to max_seq_length. `label_ids` holds
a word's tag id at its first piece and 0 elsewhere; `label_weights` is 1 at first pieces and 0
elsewhere, so the loss and the metrics count words, not pieces. Words past max_seq_length − 2
pieces are cut (counted and logged). `sentence_index` keys the outputs back to the sentences.
"""

import tensorflow as tf
from absl import logging

from albert_tf import progress
from albert_tf.text import tokenization
from albert_tf.files import feature_records
from albert_tf.files.feature_records import int64_feature

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_weights")


class WordPieces:
    """A word's pieces as the model's tokenizer cuts it (SentencePiece or WordPiece)."""

    def __init__(self, tokenizer, do_lower_case):
        self.tokenizer = tokenizer
        self.do_lower_case = do_lower_case
        self.unknown = "<unk>" if tokenizer.sp_model else "[UNK]"

    def __call__(self, word):
        if self.tokenizer.sp_model:
            word = tokenization.preprocess_text(word, lower=self.do_lower_case)
        return self.tokenizer.tokenize(word) or [self.unknown]


def convert(sentence, index, word_pieces, label_map, max_seq_length):
    """(tf.train.Example, number of words that fit) of one sentence."""
    tokens, label_ids, weights, kept = ["[CLS]"], [0], [0], 0
    for word, tag in zip(sentence.words, sentence.tags):
        pieces = word_pieces(word)
        if len(tokens) + len(pieces) > max_seq_length - 1:
            break
        tokens += pieces
        label_ids += [label_map[tag]] + [0] * (len(pieces) - 1)
        weights += [1] + [0] * (len(pieces) - 1)
        kept += 1
    tokens.append("[SEP]")
    label_ids.append(0)
    weights.append(0)
    padding = [0] * (max_seq_length - len(tokens))
    columns = {"input_ids": word_pieces.tokenizer.convert_tokens_to_ids(tokens) + padding,
               "input_mask": [1] * len(tokens) + padding, "segment_ids": [0] * max_seq_length,
               "label_ids": label_ids + padding, "label_weights": weights + padding,
               "sentence_index": [index]}
    example = tf.train.Example(features=tf.train.Features(
        feature={name: int64_feature(values) for name, values in columns.items()}))
    return example, kept


def write_records(sentences, word_pieces, label_map, max_seq_length, path):
    """Writes every sentence's record to `path` atomically; returns the words cut off."""
    cut = 0

    def serialized():
        nonlocal cut
        converting = progress.track(enumerate(sentences), f"Converting sentences to {path}",
                                    len(sentences), unit="sentences")
        for index, sentence in converting:
            example, kept = convert(sentence, index, word_pieces, label_map, max_seq_length)
            cut += len(sentence.words) - kept
            yield example.SerializeToString()

    feature_records.write_records(serialized(), path)
    if cut:
        logging.warning("%s: %d words did not fit in --max_seq_length=%d and are not tagged "
                        "(nor scored)", path, cut, max_seq_length)
    return cut


def parse(serialized, max_seq_length):
    """A batch of serialized records → int32 tensors (label_weights float32)."""
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in SEQUENCE_FEATURES}
    spec["sentence_index"] = tf.io.FixedLenFeature([], tf.int64)
    parsed = {name: tf.cast(value, tf.int32)
              for name, value in tf.io.parse_example(serialized, spec).items()}
    parsed["label_weights"] = tf.cast(parsed["label_weights"], tf.float32)
    return parsed
