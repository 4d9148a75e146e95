"""The SQuAD models of the original `squad_utils`: v1 span head and v2 XLNet-style beam head.

v1 (`create_v1_model`): logits = sequence_output · Wᵀ + b with W = `cls/squad/output_weights`
[2, H] (stddev 0.02, hard-coded as in the original) and b = `cls/squad/output_bias` [2], split
into start and end logits [B, S]. Loss ½(CE_start + CE_end) over all positions, unmasked.

v2 (`create_v2_model`), variables at the root scope, initializer config.initializer_range:
- `start_logits/dense` H→1; masked logit·(1−p_mask) − 1e30·p_mask; log-softmax over positions.
- `end_logits/dense_0` 2H→H tanh on [h_t, h_start], `end_logits/LayerNorm` (eps 1e-12),
  `end_logits/dense_1` H→1, masked, log-softmax. h_start is the gold start's state when
  `start_positions` is given (teacher forcing, for the loss), otherwise the state at each of
  the start_n_top best starts (beam) and the end_n_top best ends are kept per start.
- `answer_class/dense_0` 2H→H tanh on [Σ softmax(start)·h, h_[CLS]], dropout(dropout_prob,
  training only), `answer_class/dense_1` H→1 without bias → `cls_logits` [B]
  (higher = more likely unanswerable).
Loss ½(CE_start + CE_end) + ½·sigmoid-CE(cls_logits, is_impossible).
The original transposes to [S, B, H] first; the arithmetic here is the same in [B, S, H].
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import layers, saving, task_model

V1_HEAD_INITIALIZER_STDDEV = 0.02  # hard-coded in create_v1_model
MASKED_LOGIT = 1e30


@saving.register
class AlbertSquadV1(task_model.AlbertTaskModel):
    """`AlbertSquadV1(encoder)`; `model(inputs)` → {"start_logits", "end_logits"} [B, S]
    float32."""

    def __init__(self, encoder, **kwargs):
        # Always the padded computation: the original's v1.1 n-best list can pick padding
        # positions, whose logits an encoder that skips padding would not compute.
        if encoder.skip_padding:
            raise ValueError("skip_padding: the SQuAD v1.1 model keeps the padded computation "
                             "(its n-best list can pick padding positions)")
        super().__init__(encoder, **kwargs)
        self._record_arguments()
        self.head = layers.ClassificationHead(self.config.hidden_size, 2,
                                              V1_HEAD_INITIALIZER_STDDEV,
                                              dtype=self.dtype_policy, name="cls_squad")
        self.built = True  # every variable exists already

    def call(self, inputs, training=False):
        sequence = tf.cast(self.encoder(inputs, training=training)["sequence_output"],
                           tf.float32)
        batch, seq_length = tf.shape(sequence)[0], tf.shape(sequence)[1]
        flat = tf.reshape(sequence, [-1, self.config.hidden_size])
        logits = tf.reshape(self.head(flat), [batch, seq_length, 2])
        return {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        names.update(layers.prefixed("cls/squad/", self.head.checkpoint_variables()))
        return names


def v1_per_example_loss(outputs, start_positions, end_positions):
    """½(CE_start + CE_end) per example [B]; its mean is the original's loss."""
    start = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(start_positions, tf.int32), logits=outputs["start_logits"])
    end = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(end_positions, tf.int32), logits=outputs["end_logits"])
    return 0.5 * (start + end)


def _masked(logits, p_mask):
    return logits * (1.0 - p_mask) - MASKED_LOGIT * p_mask


@saving.register
class AlbertSquadV2(task_model.AlbertTaskModel):
    """`AlbertSquadV2(encoder, start_n_top, end_n_top)`; `model(inputs, training)`; `inputs`
    also needs float/int `p_mask` [B, S].

    With `start_positions` in `inputs`: {"start_log_probs", "end_log_probs" [B, S],
    "cls_logits" [B]} (teacher-forced ends, for the loss). Without: the beam outputs
    {"start_top_log_probs", "start_top_index" [B, k], "end_top_log_probs", "end_top_index"
    [B, k·end_n_top], "cls_logits" [B]}.
    """

    def __init__(self, encoder, start_n_top=5, end_n_top=5, dropout_prob=0.1, **kwargs):
        if start_n_top < 1 or end_n_top < 1:
            raise ValueError(f"start_n_top ({start_n_top}) and end_n_top ({end_n_top}) must "
                             "be at least 1")
        super().__init__(encoder, **kwargs)
        self._record_arguments(start_n_top=start_n_top, end_n_top=end_n_top,
                               dropout_prob=dropout_prob)
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        hidden, init = self.config.hidden_size, self.config.initializer_range
        head_policy = layers.float32_policy(self.dtype_policy)

        def dense(name, width_in, width_out, activation=None, use_bias=True):
            return layers.Dense(width_in, width_out, init, activation, use_bias,
                                dtype=head_policy, name=name)

        self.start_dense = dense("start_logits_dense", hidden, 1)
        self.end_dense_0 = dense("end_logits_dense_0", 2 * hidden, hidden, tf.math.tanh)
        self.end_layer_norm = layers.LayerNorm(hidden, dtype=head_policy,
                                               name="end_logits_LayerNorm")
        self.end_dense_1 = dense("end_logits_dense_1", hidden, 1)
        self.answer_dense_0 = dense("answer_class_dense_0", 2 * hidden, hidden, tf.math.tanh)
        self.answer_dropout = keras.layers.Dropout(dropout_prob, dtype=head_policy)
        self.answer_dense_1 = dense("answer_class_dense_1", hidden, 1, use_bias=False)
        self.built = True  # every variable exists already

    def _end_logits(self, hidden_states, start_states):
        """[..., S, H] states and matching [..., S, H] start states → [..., S] end logits."""
        x = self.end_dense_0(tf.concat([hidden_states, start_states], axis=-1))
        return tf.squeeze(self.end_dense_1(self.end_layer_norm(x)), -1)

    def call(self, inputs, training=False):
        sequence = tf.cast(self.encoder(inputs, training=training)["sequence_output"],
                           tf.float32)
        seq_length = tf.shape(sequence)[1]
        p_mask = tf.cast(inputs["p_mask"], tf.float32)
        start_masked = _masked(tf.squeeze(self.start_dense(sequence), -1), p_mask)
        start_log_probs = tf.nn.log_softmax(start_masked, -1)
        outputs = {}
        if "start_positions" in inputs:
            start_states = tf.gather(sequence, tf.cast(inputs["start_positions"], tf.int32),
                                     axis=1, batch_dims=1)  # [B, H]
            start_states = tf.tile(start_states[:, None], [1, seq_length, 1])
            end_masked = _masked(self._end_logits(sequence, start_states), p_mask)
            outputs["start_log_probs"] = start_log_probs
            outputs["end_log_probs"] = tf.nn.log_softmax(end_masked, -1)
        else:
            start_top_log_probs, start_top_index = tf.math.top_k(start_log_probs,
                                                                 self.start_n_top)
            start_states = tf.gather(sequence, start_top_index, axis=1, batch_dims=1)  # [B,k,H]
            start_states = tf.tile(tf.expand_dims(start_states, 2), [1, 1, seq_length, 1])
            hidden_states = tf.tile(tf.expand_dims(sequence, 1), [1, self.start_n_top, 1, 1])
            end_masked = _masked(self._end_logits(hidden_states, start_states),
                                 tf.expand_dims(p_mask, 1))  # [B, k, S]
            end_top_log_probs, end_top_index = tf.math.top_k(
                tf.nn.log_softmax(end_masked, -1), self.end_n_top)
            beam = self.start_n_top * self.end_n_top
            outputs.update(
                start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
                end_top_log_probs=tf.reshape(end_top_log_probs, [-1, beam]),
                end_top_index=tf.reshape(end_top_index, [-1, beam]))

        cls_feature = sequence[:, 0]
        # Σ_s softmax(start)_s · h_s, without tf.einsum so the graph converts to TFLite, and
        # tf.expand_dims rather than [..., None]: TFLite's StridedSlice lacks new axes on
        # inputs of unknown length (the int8 export's [B, S]).
        start_feature = tf.reduce_sum(
            sequence * tf.expand_dims(tf.nn.softmax(start_masked, -1), -1), axis=1)
        answer = self.answer_dense_0(tf.concat([start_feature, cls_feature], axis=-1))
        answer = self.answer_dropout(answer, training=training)
        outputs["cls_logits"] = tf.squeeze(self.answer_dense_1(answer), -1)
        return outputs

    def checkpoint_variables(self):
        names = self.encoder.checkpoint_variables()
        for scope, layer in (("start_logits/dense/", self.start_dense),
                             ("end_logits/dense_0/", self.end_dense_0),
                             ("end_logits/LayerNorm/", self.end_layer_norm),
                             ("end_logits/dense_1/", self.end_dense_1),
                             ("answer_class/dense_0/", self.answer_dense_0),
                             ("answer_class/dense_1/", self.answer_dense_1)):
            names.update(layers.prefixed(scope, layer.checkpoint_variables()))
        return collections.OrderedDict(names)


def v2_per_example_loss(outputs, start_positions, end_positions, is_impossible):
    """½(CE_start + CE_end) + ½·sigmoid-CE(cls_logits, is_impossible) per example [B]."""
    def nll(log_probs, positions):
        return -tf.gather(log_probs, tf.cast(positions, tf.int32), axis=1, batch_dims=1)

    span = 0.5 * (nll(outputs["start_log_probs"], start_positions)
                  + nll(outputs["end_log_probs"], end_positions))
    answer_class = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(is_impossible, tf.float32), logits=outputs["cls_logits"])
    return span + 0.5 * answer_class


def build_squad_model(encoder, version_2_with_negative, start_n_top=5, end_n_top=5,
                      dropout_prob=0.1):
    """The v1 or v2 model on `encoder` for `--version_2_with_negative` (an encoder that skips
    padding: v2 only)."""
    if version_2_with_negative:
        return AlbertSquadV2(encoder, start_n_top, end_n_top, dropout_prob)
    return AlbertSquadV1(encoder)
