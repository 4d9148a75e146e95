"""Pretraining heads (`cls/predictions`, `cls/seq_relationship`) and `AlbertPretrainingModel`.

Masked LM: gather `sequence_output` at `masked_lm_positions` [B,M], dense H→E with hidden_act,
LayerNorm, then logits = x · word_embeddingsᵀ + output_bias [V] (weights tied to the encoder's
table). Sentence order: logits = pooled_output · output_weightsᵀ + output_bias, 2 classes.
Logits are float32 under any precision policy; losses live with the pretraining job.
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import layers, saving, task_model
from albert_tf.modeling.bias import add_bias


class MaskedLMHead(keras.layers.Layer):
    """`cls/predictions`: `transform/dense`, `transform/LayerNorm`, `output_bias`."""

    def __init__(self, config, embedding_table, dtype=None, **kwargs):
        # The head itself is float32 (so the tied table is read in float32); the transform
        # runs in the model's compute dtype.
        super().__init__(dtype=layers.float32_policy(dtype), **kwargs)
        self.embedding_table = embedding_table
        self.transform = layers.Dense(
            config.hidden_size, config.embedding_size, config.initializer_range,
            layers.get_activation(config.hidden_act), dtype=dtype, name="transform")
        self.layer_norm = layers.LayerNorm(config.embedding_size, dtype=dtype, name="LayerNorm")
        self.output_bias = self.add_weight(name="output_bias", shape=(config.vocab_size,),
                                           initializer="zeros")
        self.built = True  # every variable exists already

    def call(self, sequence_output, masked_lm_positions, training=False):
        """[B,S,H], [B,M] → logits [B,M,V]: float32, except in training with static shapes,
        where they are in the model's compute dtype (bfloat16 under mixed precision).

        The logits are one 2-D product over the B·M gathered rows, as the original's: a
        [B,M,E]·[V,E]ᵀ batch product would make the table's gradient B per-example [E,V]
        products summed afterwards (a tenth of a small model's CPU step). In training that
        product and its two gradient products take the compute dtype (as the rest of a
        mixed-precision model), and the fused loss (`modeling.fused.sparse_cross_entropy`) reads
        them in float32; inference and every export keep float32 logits.
        """
        gathered = tf.gather(sequence_output, masked_lm_positions, batch_dims=1)
        transformed = self.layer_norm(self.transform(gathered, training=training))
        rows = tf.reshape(transformed, [-1, transformed.shape[-1]])
        table, bias = self.embedding_table, self.output_bias
        if training and rows.shape.is_fully_defined():
            dtype = self.transform.compute_dtype
            rows, table, bias = tf.cast(rows, dtype), tf.cast(table, dtype), tf.cast(bias, dtype)
        logits = add_bias(tf.matmul(rows, table, transpose_b=True), bias)
        return tf.reshape(logits, tf.concat([tf.shape(masked_lm_positions), [logits.shape[-1]]], axis=0))

    def checkpoint_variables(self):
        return collections.OrderedDict([
            *layers.prefixed("transform/dense/", self.transform.checkpoint_variables()).items(),
            *layers.prefixed("transform/LayerNorm/", self.layer_norm.checkpoint_variables()).items(),
            ("output_bias", self.output_bias),
        ])


@saving.register
class AlbertPretrainingModel(task_model.AlbertTaskModel):
    """`AlbertPretrainingModel(encoder)`: the encoder + masked-LM + sentence-order heads.

    `model(inputs, training)` takes the encoder's inputs plus optional int32
    `masked_lm_positions` [B,M]; returns the encoder's outputs plus `sop_logits` [B,2] and, when
    positions are given, `mlm_logits` [B,M,V].
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(encoder, **kwargs)
        self._record_arguments()
        config = self.config
        self.mlm_head = MaskedLMHead(config, encoder.embedding_table, dtype=self.dtype_policy,
                                     name="predictions")
        self.sop_head = layers.ClassificationHead(config.hidden_size, 2, config.initializer_range,
                                                  dtype=self.dtype_policy, name="seq_relationship")
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        outputs = dict(self.encoder(inputs, training=training))
        outputs["sop_logits"] = self.sop_head(outputs["pooled_output"])
        if inputs.get("masked_lm_positions") is not None:
            outputs["mlm_logits"] = self.mlm_head(outputs["sequence_output"], inputs["masked_lm_positions"],
                                                  training=training)
        return outputs

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        names.update(layers.prefixed("cls/predictions/", self.mlm_head.checkpoint_variables()))
        names.update(layers.prefixed("cls/seq_relationship/", self.sop_head.checkpoint_variables()))
        return names
