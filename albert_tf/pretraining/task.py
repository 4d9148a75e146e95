"""The masked-LM + sentence-order pretraining task of run_pretraining.py.

Losses, as the original's model_fn:
    masked_lm_loss      = Σ w·(−log p(id)) / (Σ w + 1e-5)    over masked positions, w = weights
    sentence_order_loss = mean over examples of −log p(label)
    loss                = masked_lm_loss + w_sop · sentence_order_loss
with w_sop = 1 as the original; w_sop = 0 trains the masked LM alone (new, for the paper's
"MLM only" ablation: the sentence-order head then gets no gradient, its metrics still report).
The sums run over the whole global batch (see `training.task.Task`), so the loss does not
depend on the number of replicas or accumulation micro-batches.

Metrics, names exact: masked_lm_accuracy (weighted by masked_lm_weights), masked_lm_loss
(weighted mean of the per-position loss), sentence_order_accuracy, sentence_order_loss; the loop
adds loss and global_step.
"""

import keras
import tensorflow as tf

from albert_tf.modeling import encoder, fused
from albert_tf.modeling import pretraining as pretraining_model
from albert_tf.pretraining import input_pipeline
from albert_tf.training import strategy as strategy_lib, task

MLM_DENOMINATOR_EPSILON = 1e-5
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


def masked_lm_outcomes(features, outputs):
    """Per-position −log p(masked_lm_ids) [B,M], whether the arg-max prediction is the id [B,M]
    (1/0) and the weights [B,M], all float32.

    With static shapes (XLA compiles once per shape) one fused kernel each way
    (`modeling.fused`, reading training's bfloat16 logits as they are), else the original's
    log_softmax · one_hot and tf.argmax in float32."""
    logits = tf.convert_to_tensor(outputs["mlm_logits"])
    ids = tf.cast(features["masked_lm_ids"], tf.int32)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    if logits.shape.is_fully_defined():
        per_position, correct = fused.sparse_cross_entropy(logits, ids)
        return per_position, correct, weights
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    per_position = -tf.reduce_sum(
        tf.one_hot(ids, tf.shape(log_probs)[-1], dtype=log_probs.dtype) * log_probs, axis=-1)
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), ids), tf.float32)
    return per_position, correct, weights


def sentence_order_losses(features, outputs):
    """Per-example −log p(next_sentence_labels) [B]."""
    log_probs = tf.nn.log_softmax(outputs["sop_logits"], axis=-1)
    labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    return -tf.reduce_sum(tf.one_hot(labels, 2, dtype=log_probs.dtype) * log_probs, axis=-1)


class PretrainingTask(task.Task):
    """MLM + SOP on the TFRecords of create_pretraining_data.py."""

    eval_metric_name = "masked_lm_accuracy"
    eval_metric_higher_is_better = True
    # the fused loss reads training's bfloat16 logits in float32 (no [B·M, vocabulary] casts)
    outputs_in_compute_dtype = ("mlm_logits",)
    sentence_order_loss_weight = 1.0

    def __init__(self, albert_config, input_files, max_seq_length, max_predictions_per_seq,
                 eval_input_files=None, seed=None, sentence_order_loss_weight=1.0):
        """`input_files`, `eval_input_files`: comma-separated files/globs (or lists of them)."""
        if sentence_order_loss_weight < 0:
            raise ValueError(f"sentence_order_loss_weight must be >= 0, got {sentence_order_loss_weight}")
        self.sentence_order_loss_weight = float(sentence_order_loss_weight)
        albert_config.check_max_seq_length(max_seq_length)
        self.albert_config = albert_config
        self.input_files = input_files
        self.eval_input_files = eval_input_files or input_files
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.seed = seed

    def build_model(self, strategy):
        return pretraining_model.AlbertPretrainingModel(encoder.AlbertEncoder(
            self.albert_config, use_one_hot_embeddings=strategy_lib.is_tpu(strategy)))

    def train_dataset(self, input_context, batch_size):
        return input_pipeline.pretraining_dataset(
            self.input_files, batch_size=batch_size, max_seq_length=self.max_seq_length,
            max_predictions_per_seq=self.max_predictions_per_seq, is_training=True,
            input_context=input_context, seed=self.seed)

    def eval_dataset(self, input_context, batch_size):
        return input_pipeline.pretraining_dataset(
            self.eval_input_files, batch_size=batch_size, max_seq_length=self.max_seq_length,
            max_predictions_per_seq=self.max_predictions_per_seq, is_training=False,
            input_context=input_context)

    def call_model(self, model, features, training):
        return model({name: features[name] for name in MODEL_INPUTS}, training=training)

    def loss_normalizers(self, features):
        return {
            "masked_lm_weights": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32),
        }

    def compute_loss(self, features, outputs, normalizers):
        per_position, _, weights = masked_lm_outcomes(features, outputs)
        masked_lm = tf.reduce_sum(weights * per_position) / (
            normalizers["masked_lm_weights"] + MLM_DENOMINATOR_EPSILON)
        sentence_order = tf.reduce_sum(sentence_order_losses(features, outputs)) / (
            normalizers["examples"])
        return masked_lm + self.sentence_order_loss_weight * sentence_order

    def build_metrics(self):
        return {
            # the weighted mean of masked_lm_outcomes' 1/0: tf.argmax(logits) == id, as Accuracy
            "masked_lm_accuracy": keras.metrics.Mean(name="masked_lm_accuracy"),
            "masked_lm_loss": keras.metrics.Mean(name="masked_lm_loss"),
            "sentence_order_accuracy": keras.metrics.Accuracy(name="sentence_order_accuracy"),
            "sentence_order_loss": keras.metrics.Mean(name="sentence_order_loss"),
        }

    def update_metrics(self, metrics, features, outputs):
        per_position, correct, weights = masked_lm_outcomes(features, outputs)
        metrics["masked_lm_accuracy"].update_state(correct, sample_weight=weights)
        metrics["masked_lm_loss"].update_state(per_position, sample_weight=weights)
        labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
        sop_predictions = tf.argmax(outputs["sop_logits"], axis=-1, output_type=tf.int32)
        metrics["sentence_order_accuracy"].update_state(labels, sop_predictions)
        metrics["sentence_order_loss"].update_state(sentence_order_losses(features, outputs))
