"""SavedModel and TFLite export of a fine-tuned SQuAD model (run_squad.py --export_dir).

As the original run_squad_v1.py: a SavedModel under `<export_dir>/saved_model/<version>/`
(seconds since the epoch; TF Serving's base path is `<export_dir>/saved_model`), written under a
temporary name and renamed when complete, and `<export_dir>/albert_model.tflite` converted from
a copy of the model on a padded encoder (the model's may skip padding), with fixed inputs
[1, max_seq_length]. v2 models are exported too (the original exported v1 only).

Signatures:
  serving_default  int32 `input_ids`, `input_mask`, `segment_ids` [B, S] laid out as the
                   features of `squad.features` ([CLS] question [SEP] context [SEP]).
                   v1 → `start_logits`, `end_logits` [B, S]. v2 → `start_top_log_probs`,
                   `start_top_index` [B, start_n_top], `end_top_log_probs`, `end_top_index`
                   [B, start_n_top·end_n_top], `cls_logits` [B]; the v2 `p_mask` is derived in
                   the graph from `input_mask` and `segment_ids`.
  answer           (new; needs a SentencePiece model) string `question`, `context` [B] →
                   `answer` [B] string, `score` [B] float32 and, for v2, `null_score` [B].
                   The features of `squad.features` are built in the graph: ids from
                   `tf_tokenization.InGraphTokenizer` (those `FullTokenizer` gives), the
                   question cut to max_query_length pieces, sliding windows with doc_stride,
                   the max-context rule for starts. The answer is the context substring under
                   the best valid span over all windows (start with max context, end in the
                   context, end ≥ start, ≤ max_answer_length pieces), cut at tensorflow-text's
                   byte offsets and stripped; score = start + end logit (v1, over every pair)
                   or log-probability (v2, over the beam). v2: null_score is the minimum
                   `cls_logits` over the windows and the answer is "" when it exceeds the
                   exported threshold.

`--export_precision=int8` also writes a dynamic-range int8 `model.tflite` of `serving_default`
(inputs [B, S], as the SavedModel's) into the version directory (`export.tflite`; served with
`--prefer_tflite_model`), converted from the served model itself (a v2 encoder that skips
padding converts with dynamic shapes); the version's warm-up then holds only `serving_default`
requests. `answer` needs TensorFlow ops (the tokenizer)
and stays in the SavedModel only.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.files import io_utils
from albert_tf.text import tf_tokenization
from albert_tf.export import policies
from albert_tf.export import tflite
from albert_tf.export import versioned
from albert_tf.export import warmup_requests
from albert_tf.modeling import encoder, squad_heads
from albert_tf.training import length_buckets

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")
V2_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
              "cls_logits")
TFLITE_NAME = "albert_model.tflite"
EXPORT_PRECISIONS = ("float32", "int8")
TFLITE_SIGNATURES = ("serving_default",)  # the ids signature; `answer` needs TensorFlow ops


def p_mask_from_inputs(input_mask, segment_ids):
    """The features' p_mask: 0 at [CLS] and on context pieces (segment 1, before the last
    real token, which is the closing [SEP]); 1 elsewhere."""
    positions = tf.range(tf.shape(input_mask)[1])[None, :]
    last = tf.reduce_sum(input_mask, axis=1, keepdims=True) - 1
    context = (segment_ids == 1) & (input_mask == 1) & (positions < last)
    return tf.cast(~(context | (positions == 0)), tf.int32)


def model_outputs(model, version_2_with_negative, input_ids, input_mask, segment_ids):
    inputs = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
    if version_2_with_negative:
        inputs["p_mask"] = p_mask_from_inputs(input_mask, segment_ids)
    outputs = model(inputs, training=False)
    names = V2_OUTPUTS if version_2_with_negative else ("start_logits", "end_logits")
    return {name: outputs[name] for name in names}


def load_squad_model(albert_config, checkpoint_path, version_2_with_negative, start_n_top=5,
                     end_n_top=5, skip_padding=False):
    """A SQuAD model with every variable (heads included) from a fine-tuned checkpoint;
    `skip_padding`: the served batching's (`Batching.served`; v2 only)."""
    model = squad_heads.build_squad_model(
        encoder.AlbertEncoder(albert_config, skip_padding=skip_padding),
        version_2_with_negative, start_n_top, end_n_top)
    checkpoints.load_complete(model.checkpoint_variables(), checkpoint_path,
                              f"a fine-tuned SQuAD {'v2' if version_2_with_negative else 'v1'} "
                              "checkpoint")
    return model


class SquadSignatures:
    """The serving functions around one model (see the module docstring)."""

    def __init__(self, model, version_2_with_negative, max_seq_length, max_query_length,
                 doc_stride, max_answer_length, tokenizer=None, null_threshold=None,
                 batching=None):
        """`batching`: the run's served `length_buckets.Batching` (default: `auto`), whose
        lengths the warm-up requests run at."""
        self.model = model
        self.version_2 = version_2_with_negative
        self.max_seq_length, self.max_query_length = max_seq_length, max_query_length
        self.doc_stride, self.max_answer_length = doc_stride, max_answer_length
        self.tokenizer = tokenizer
        self.null_threshold = np.inf if null_threshold is None else float(null_threshold)
        self.batching = batching or length_buckets.Batching.auto(max_seq_length)

    def ids(self, input_ids, input_mask, segment_ids):
        return model_outputs(self.model, self.version_2, input_ids, input_mask, segment_ids)

    def _windows(self, question, context):
        """The features of `squad.features` in the graph, padded to [B, W, S] windows.

        Returns the model inputs, the paragraph piece index under each position (`pieces`),
        whether the position is a paragraph piece with its maximum context in this window
        (`is_max`, the start rule), whether it is a paragraph piece at all (`is_doc`, the end
        rule), which windows exist (`real`) and the pieces' byte offsets in `context`.
        """
        seq = self.max_seq_length
        query = self.tokenizer.tokenize(question)[:, :self.max_query_length]
        doc, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(context)
        query_length = tf.cast(query.row_lengths(), tf.int32)
        num_pieces = tf.cast(doc.row_lengths(), tf.int32)
        max_doc = seq - 3 - query_length
        step = tf.minimum(max_doc, self.doc_stride)
        num_windows = 1 + (tf.maximum(num_pieces - max_doc, 0) + step - 1) // step
        window = tf.range(tf.reduce_max(num_windows))[None, :]  # [1, W]
        real = window < num_windows[:, None]  # [B, W]
        win_start = window * step[:, None]
        win_length = tf.where(real, tf.minimum(max_doc[:, None], num_pieces[:, None] - win_start),
                              0)

        position = tf.range(seq)[None, None, :]  # [1, 1, S]
        doc_offset = (query_length + 2)[:, None, None]
        doc_end = doc_offset + win_length[:, :, None]  # the closing [SEP]
        pieces = win_start[:, :, None] + position - doc_offset  # [B, W, S]
        is_doc = (position >= doc_offset) & (position < doc_end)
        padded_doc = tf.concat([tf.cast(doc.to_tensor(0), tf.int32),
                                tf.zeros([tf.shape(real)[0], 1], tf.int32)], axis=1)
        doc_ids = tf.gather(padded_doc, tf.clip_by_value(pieces, 0, tf.shape(padded_doc)[1] - 1),
                            batch_dims=1)
        padded_query = tf.concat([query.to_tensor(0), tf.zeros_like(query_length)[:, None]],
                                 axis=1)
        query_ids = tf.gather(padded_query, tf.clip_by_value(
            position[0, 0] - 1, 0, tf.shape(padded_query)[1] - 1), axis=1)[:, None, :]
        is_query = (position >= 1) & (position < doc_offset - 1)
        is_sep = (position == doc_offset - 1) | (position == doc_end)
        input_ids = tf.where(position == 0, self.tokenizer.cls_id, tf.where(
            is_query, query_ids, tf.where(is_sep, self.tokenizer.sep_id,
                                          tf.where(is_doc, doc_ids, 0))))
        input_mask = tf.cast((position <= doc_end) & real[:, :, None], tf.int32)
        segment_ids = tf.cast(is_doc | (position == doc_end), tf.int32)

        # Max context (features.check_is_max_context): score each window holding the piece,
        # the first best wins, as tf.argmax does.
        other_start = win_start[:, None, None, :]  # [B, 1, 1, W']
        other_last = other_start + win_length[:, None, None, :] - 1
        inside = (pieces[..., None] >= other_start) & (pieces[..., None] <= other_last)
        score = (tf.cast(tf.minimum(pieces[..., None] - other_start,
                                    other_last - pieces[..., None]), tf.float32)
                 + 0.01 * tf.cast(win_length[:, None, None, :], tf.float32))
        best_window = tf.argmax(tf.where(inside, score, -np.inf), axis=-1, output_type=tf.int32)
        is_max = is_doc & (best_window == window[:, :, None])
        inputs = (input_ids, input_mask, segment_ids)
        byte_starts, byte_ends = (  # one spare column: a batch of empty contexts still gathers
            tf.concat([t.to_tensor(0), tf.zeros([tf.shape(real)[0], 1], tf.int64)], axis=1)
            for t in (byte_starts, byte_ends))
        return inputs, pieces, is_max, is_doc, real, byte_starts, byte_ends

    def answer(self, question, context):
        inputs, pieces, is_max, is_doc, real, byte_starts, byte_ends = self._windows(
            question, context)
        batch, windows, seq = tf.unstack(tf.shape(inputs[0]))
        flat = [tf.reshape(t, [-1, self.max_seq_length]) for t in inputs]
        outputs = {k: tf.reshape(v, tf.concat([[batch, windows], tf.shape(v)[1:]], 0))
                   for k, v in self.ids(*flat).items()}
        if self.version_2:
            repeat = tf.shape(outputs["end_top_index"])[2] // tf.shape(
                outputs["start_top_index"])[2]
            starts = tf.repeat(outputs["start_top_index"], repeat, axis=2)
            ends = outputs["end_top_index"]
            scores = (tf.repeat(outputs["start_top_log_probs"], repeat, axis=2)
                      + outputs["end_top_log_probs"])
        else:
            every = tf.range(seq * seq)
            starts = tf.broadcast_to(every // seq, [batch, windows, seq * seq])
            ends = tf.broadcast_to(every % seq, [batch, windows, seq * seq])
            scores = (tf.gather(outputs["start_logits"], starts, batch_dims=2)
                      + tf.gather(outputs["end_logits"], ends, batch_dims=2))
        valid = (tf.gather(is_max, starts, batch_dims=2) & tf.gather(is_doc, ends, batch_dims=2)
                 & (ends >= starts) & (ends - starts < self.max_answer_length))
        scores = tf.reshape(tf.where(valid, scores, -np.inf), [batch, -1])
        best = tf.argmax(scores, axis=1, output_type=tf.int32)
        score = tf.gather(scores, best, batch_dims=1)

        def piece_at(positions):
            flat_positions = tf.reshape(positions, [batch, -1])
            position = tf.gather(flat_positions, best, batch_dims=1)
            best_window = best // tf.shape(positions)[2]
            window_pieces = tf.gather(pieces, best_window, batch_dims=1)  # [B, S]
            return tf.maximum(tf.gather(window_pieces, position, batch_dims=1), 0)

        first = tf.gather(byte_starts, piece_at(starts), batch_dims=1)
        last = tf.gather(byte_ends, piece_at(ends), batch_dims=1)
        found = tf.math.is_finite(score)
        text = tf.strings.strip(tf.strings.substr(
            context, tf.where(found, first, 0), tf.where(found, last - first, 0)))
        result = {"answer": text, "score": score}
        if self.version_2:
            null_score = tf.reduce_min(tf.where(real, outputs["cls_logits"], np.inf), axis=1)
            result["answer"] = tf.where(null_score > self.null_threshold, "", text)
            result["null_score"] = null_score
        return result

    def warmup_logs(self):
        """TF Serving warm-up requests: `serving_default` at every length the run's batches
        have (`Batching.lengths`), `answer` once (it always runs max_seq_length windows)."""
        logs = [warmup_requests.predict_log("serving_default", warmup_requests.ids_inputs(
            [1, length])) for length in self.batching.lengths(self.max_seq_length)]
        if self.tokenizer is not None:
            logs.append(warmup_requests.predict_log("answer", {
                "question": warmup_requests.strings("What is warm?"),
                "context": warmup_requests.strings("The model is warm before it is served.")}))
        return logs

    def archive(self):
        dummy = tf.zeros([1, self.max_seq_length], tf.int32)
        self.ids(dummy, dummy, dummy)  # builds the model's variables
        archive = keras.export.ExportArchive()
        archive.track(self.model)
        archive.add_endpoint("serving_default", self.ids, input_signature=[
            tf.TensorSpec([None, None], tf.int32, name=name) for name in MODEL_INPUTS])
        if self.tokenizer is not None:
            archive.track(self.tokenizer)
            archive.add_endpoint("answer", self.answer, input_signature=[
                tf.TensorSpec([None], tf.string, name="question"),
                tf.TensorSpec([None], tf.string, name="context")])
        return archive


def padded_copy(model, version_2_with_negative, start_n_top=5, end_n_top=5):
    """`model` on a padded encoder (`model`'s may skip padding), for the fixed-shape
    albert_model.tflite."""
    lite = squad_heads.build_squad_model(encoder.AlbertEncoder(model.config),
                                         version_2_with_negative, start_n_top, end_n_top)
    lite_variables = lite.checkpoint_variables()
    for name, variable in model.checkpoint_variables().items():
        lite_variables[name].assign(variable)
    return lite


def ids_archive(model, version_2_with_negative, max_seq_length, input_shape=(None, None)):
    """A Keras `ExportArchive` of `serving_default` alone (the ids signature) on `model`, its
    int32 inputs of `input_shape`."""
    def serve(input_ids, input_mask, segment_ids):
        return model_outputs(model, version_2_with_negative, input_ids, input_mask, segment_ids)

    dummy = tf.zeros([1, max_seq_length], tf.int32)
    serve(dummy, dummy, dummy)  # builds the Keras layers, as the archive requires
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(TFLITE_SIGNATURES[0], serve, input_signature=[
        tf.TensorSpec(input_shape, tf.int32, name=name) for name in MODEL_INPUTS])
    return archive


def write_saved_model(signatures, export_dir, with_tflite=False):
    """Writes `<export_dir>/saved_model/<version>/` atomically; returns that path. With
    `with_tflite` the version also holds the int8 `model.tflite` of TFLITE_SIGNATURES and warms
    up only those."""
    logs = signatures.warmup_logs()
    int8 = None
    if with_tflite:
        int8 = tflite.Int8File(
            lambda: ids_archive(signatures.model, signatures.version_2, signatures.max_seq_length),
            TFLITE_SIGNATURES, {TFLITE_SIGNATURES[0]: tflite.albert_id_limits(
                signatures.model.config, MODEL_INPUTS)})
        logs = int8.warmup_logs(logs)
    path = versioned.write_archive(signatures.archive(), os.path.join(export_dir, "saved_model"),
                                   warmup_logs=logs, finish=int8)
    if int8:
        int8.log_written(path)
    return path


def write_tflite(model, version_2_with_negative, max_seq_length, path, start_n_top=5,
                 end_n_top=5):
    """Converts a `padded_copy` of `model` with inputs [1, max_seq_length] to float32 TFLite
    (the original's albert_model.tflite)."""
    archive = ids_archive(padded_copy(model, version_2_with_negative, start_n_top, end_n_top),
                          version_2_with_negative, max_seq_length, [1, max_seq_length])
    with tempfile.TemporaryDirectory() as saved_model:
        archive.write_out(saved_model, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
        flatbuffer = converter.convert()
    with io_utils.atomic_path(path) as temp:
        with tf.io.gfile.GFile(temp, "wb") as writer:
            writer.write(flatbuffer)
    return path


def export_from_checkpoint(job, checkpoint_path, export_dir, null_threshold=None,
                           include_text=True, export_precision="float32"):
    """Exports the model of a `squad.run.SquadJob`, batched as its run (`Batching.served`);
    returns {"saved_model", "tflite"}. `export_precision`: EXPORT_PRECISIONS (int8: also
    `model.tflite` in the SavedModel's version).
    `include_text=False` leaves out the raw-text `answer` signature, the only one with
    tensorflow_text's custom ops, so stock TF Serving can load the SavedModel."""
    policies.check_export_precision(export_precision, EXPORT_PRECISIONS, " for SQuAD")
    options = job.options
    batching = job.batching.served()
    model = load_squad_model(job.albert_config, checkpoint_path, options.version_2_with_negative,
                             options.start_n_top, options.end_n_top, batching.skip_padding)
    tokenizer = None
    if job.spm_model_file and include_text:
        tokenizer = tf_tokenization.InGraphTokenizer(job.spm_model_file, job.do_lower_case)
    signatures = SquadSignatures(model, options.version_2_with_negative,
                                 job.max_seq_length, options.max_query_length,
                                 options.doc_stride, options.max_answer_length, tokenizer,
                                 null_threshold, batching)
    saved_model = write_saved_model(signatures, export_dir, export_precision == "int8")
    tflite_path = write_tflite(model, options.version_2_with_negative, job.max_seq_length,
                               os.path.join(export_dir, TFLITE_NAME), options.start_n_top,
                               options.end_n_top)
    return {"saved_model": saved_model, "tflite": tflite_path}
