"""`bert/embeddings`: word [V,E] + token type [T,E] + position [P,E], LayerNorm, dropout.

Runs entirely in float32 (the sum and its LayerNorm); the E→H projection that follows lives in
the encoder, under `bert/encoder/embedding_hidden_mapping_in`, as in the original.
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import layers


class SequenceTooLongError(ValueError):
    """The input is longer than the position table."""


class AlbertEmbeddings(keras.layers.Layer):
    """`use_one_hot_embeddings=True` looks up by a one-hot matmul (faster on TPU), as the original."""

    def __init__(self, config, use_one_hot_embeddings=False, dtype=None, **kwargs):
        super().__init__(dtype=layers.float32_policy(dtype), **kwargs)
        self.config = config
        self.use_one_hot_embeddings = use_one_hot_embeddings
        initializer = layers.truncated_normal(config.initializer_range)
        width = config.embedding_size
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(config.vocab_size, width), initializer=initializer)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(config.type_vocab_size, width), initializer=initializer)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(config.max_position_embeddings, width),
            initializer=initializer)
        self.layer_norm = layers.LayerNorm(width, dtype=dtype, name="LayerNorm")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype=self.dtype_policy)
        self.built = True  # every variable exists already

    def _lookup(self, table, ids, depth):
        if self.use_one_hot_embeddings:
            return tf.einsum("BSV,VE->BSE", tf.one_hot(ids, depth, dtype=table.dtype), table)
        return tf.gather(table, ids)

    def _check_length(self, input_ids):
        limit = self.config.max_position_embeddings
        static_length = input_ids.shape[1]
        if static_length is not None and static_length > limit:
            raise SequenceTooLongError(
                f"input sequence length {static_length} exceeds max_position_embeddings {limit}")
        length = tf.shape(input_ids)[1]
        if static_length is None:
            tf.debugging.assert_less_equal(
                length, limit,
                message=f"input sequence length exceeds max_position_embeddings {limit}")
        return length

    def call(self, input_ids, segment_ids, training=False):
        length = self._check_length(input_ids)
        word_table = tf.convert_to_tensor(self.word_embeddings)
        type_table = tf.convert_to_tensor(self.token_type_embeddings)
        output = self._lookup(word_table, input_ids, self.config.vocab_size)
        output += self._lookup(type_table, segment_ids, self.config.type_vocab_size)
        output += tf.convert_to_tensor(self.position_embeddings)[tf.newaxis, :length]
        return self.dropout(self.layer_norm(output), training=training)

    def checkpoint_variables(self):
        return collections.OrderedDict([
            ("word_embeddings", self.word_embeddings),
            ("token_type_embeddings", self.token_type_embeddings),
            ("position_embeddings", self.position_embeddings),
            *layers.prefixed("LayerNorm/", self.layer_norm.checkpoint_variables()).items(),
        ])
