"""SavedModel of a fine-tuned GLUE classifier for TensorFlow Serving (run_classifier --export_dir).

Written to `<export_dir>/<version>/` (seconds since the epoch, as the original estimator export;
TF Serving serves the highest version), under a temporary name renamed when complete.
Signatures:

  serving_default  `serialized_example`: string [B], serialized `tf.Example`s with int64
                   `input_ids`, `input_mask`, `segment_ids` [max_seq_length] — the original's
                   serving input (records written by `glue.features` parse as they are).
  ids              int32 `input_ids`, `input_mask`, `segment_ids` [B, S], S <= max_position_embeddings.
  classify         (`regress` for sts-b) TF Serving's Classify / Regress API: `inputs`, string
                   [B] serialized `tf.Example`s with int64 `input_ids`, `input_mask`,
                   `segment_ids` lists of one length <= max_seq_length each (padding optional);
                   returns `classes` [B, num_labels] (label strings) and `scores` [B,
                   num_labels] (probabilities), or `outputs` [B] (the score) for regress.
  text             string `text_a`, `text_b` [B] (empty `text_b` for single-sentence tasks),
                   tokenized in the graph (`tf_tokenization.InGraphTokenizer`, identical ids to
                   `FullTokenizer`) and packed as `[CLS] a [SEP] (b [SEP])` with the original
                   truncation to max_seq_length. Only with a SentencePiece vocabulary and
                   `include_text`: it is the one signature that needs tensorflow_text's custom
                   ops, so without it the SavedModel loads in any TensorFlow (stock TF
                   Serving, `saved_model_cli run`) and `export.preprocessor` writes the tokenizer
                   as a SavedModel of its own.

The id signatures refuse ids outside [0, vocab_size), segment ids outside [0, type_vocab_size),
inputs of different shapes and sequences longer than max_position_embeddings
(InvalidArgumentError, HTTP 400 from TF Serving and serve.py) rather than compute garbage.

`text` and `serving_default` run the model on the batch cut to its longest row rounded up to one
of the run's length buckets (`training.length_buckets.Batching.served`: those of
--length_buckets, by default powers of two from 16, then max_seq_length; none with
--length_buckets=off), not on max_seq_length columns of padding: the outputs are the padded
batch's (padding is masked out) and a short request costs a short sequence. `ids` takes whatever
length the client sends. With buckets, every signature also skips the padding within the batch
inside the model (`modeling.packing`): the dense layers see only real tokens, so a batch of one
long and 31 short sentences costs little more than its real tokens.

Every signature returns `probabilities` [B, num_labels] float32 (softmax; for sts-b the raw
[B, 1] score, as the original), `predictions` [B] (int32 class index; float32 score for sts-b)
and `label` [B] (the label string; the float score for sts-b). With a threshold
(--threshold_to_export) each also returns `threshold` [B] float32: the original meant one scalar,
but TF Serving's row-format ("instances") REST answers need every output to have the batch
dimension, so the value is repeated per example.

Export precisions (--export_precision): `float32`; `bfloat16`, the same signatures, inputs and
outputs with the matrix products in bfloat16 and their weights stored in bfloat16 (Keras'
bfloat16 policy: half the bytes a batch-1 request reads, no cast per call; LayerNorm, softmax,
embedding tables and logits in float32, the same values as the mixed_bfloat16 policy gives);
`int8`, the float32 SavedModel plus a dynamic-range int8 `model.tflite` of the `ids` signature
in the same version directory (`export.tflite`), which `serve.py --prefer_tflite_model` and TF
Serving's `--prefer_tflite_model` serve instead. The int8 version's warm-up file then holds
only `ids` requests, the signature both can replay.
"""

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.text import tf_tokenization
from albert_tf.glue import features, task as glue_task
from albert_tf.export import policies
from albert_tf.export import signature_methods
from albert_tf.export import tflite
from albert_tf.export import versioned
from albert_tf.export import warmup_requests
from albert_tf.modeling import classifier, dtype_policy, encoder
from albert_tf.training import length_buckets

PRECISIONS = ("float32", "mixed_bfloat16", "bfloat16")
EXPORT_PRECISIONS = ("float32", "bfloat16", "int8")
TFLITE_SIGNATURES = ("ids",)  # the one signature of plain tensors
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")


def load_classifier(albert_config, num_labels, checkpoint_path, precision="float32",
                    skip_padding=True):
    """An `AlbertClassifier` with every variable (head included) from a fine-tuned checkpoint;
    `skip_padding`: the served batching's (`Batching.served`)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    with dtype_policy.building_under(precision):
        model = classifier.AlbertClassifier(
            encoder.AlbertEncoder(albert_config, skip_padding=skip_padding), num_labels)
    checkpoints.load_complete(model.checkpoint_variables(), checkpoint_path,
                              f"a fine-tuned classifier with {num_labels} label(s)")
    return model


class ClassifierSignatures:
    """The three serving functions around one model (see the module docstring)."""

    def __init__(self, model, label_list, max_seq_length, regression, tokenizer=None,
                 cls_id=None, sep_id=None, threshold=None, batching=None):
        """`batching`: the run's served `length_buckets.Batching` (default: `auto`)."""
        self.model = model
        self.max_seq_length = max_seq_length
        self.batching = batching or length_buckets.Batching.auto(max_seq_length)
        self.regression = regression
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = cls_id, sep_id
        self.threshold = threshold
        self.label_names = None if regression else tf.constant([str(label) for label in label_list])

    def outputs(self, input_ids, input_mask, segment_ids):
        logits = self.model({"input_ids": input_ids, "input_mask": input_mask,
                             "segment_ids": segment_ids}, training=False)["logits"]
        outputs = glue_task.outputs_from_logits(logits, self.regression)
        if self.regression:
            outputs["label"] = outputs["predictions"]
        else:
            outputs["label"] = tf.gather(self.label_names, outputs["predictions"])
        if self.threshold is not None:
            outputs["threshold"] = tf.fill(tf.shape(outputs["predictions"])[:1],
                                           tf.constant(self.threshold, tf.float32))
        return outputs

    def _trimmed_outputs(self, padded):
        """`outputs` of a batch padded to max_seq_length, cut to its bucket length first."""
        trimmed = self.batching.trim_batch(
            {name: tf.cast(padded[name], tf.int32) for name in MODEL_INPUTS}, MODEL_INPUTS)
        return self.outputs(*(trimmed[name] for name in MODEL_INPUTS))

    def checked(self, input_ids, input_mask, segment_ids):
        """The inputs, after asserting that the model can embed them."""
        config = self.model.config
        shape = tf.shape(input_ids)
        checks = [
            tf.debugging.assert_equal(shape, tf.shape(input_mask),
                                      message="input_ids and input_mask differ in shape"),
            tf.debugging.assert_equal(shape, tf.shape(segment_ids),
                                      message="input_ids and segment_ids differ in shape"),
            tf.debugging.assert_less_equal(shape[1], config.max_position_embeddings,
                                           message="sequence longer than max_position_embeddings"),
            tf.debugging.assert_non_negative(input_ids, message="input_ids must be >= 0"),
            tf.debugging.assert_less(input_ids, config.vocab_size,
                                     message="input_ids must be < vocab_size"),
            tf.debugging.assert_non_negative(segment_ids, message="segment_ids must be >= 0"),
            tf.debugging.assert_less(segment_ids, config.type_vocab_size,
                                     message="segment_ids must be < type_vocab_size"),
        ]
        with tf.control_dependencies(checks):
            return tuple(tf.identity(tensor) for tensor in (input_ids, input_mask, segment_ids))

    def serialized(self, serialized_example):
        spec = features.name_to_features(self.max_seq_length, self.regression)
        spec = {name: spec[name] for name in MODEL_INPUTS}
        parsed = tf.io.parse_example(serialized_example, spec)
        checked = self.checked(*(tf.cast(parsed[name], tf.int32) for name in MODEL_INPUTS))
        return self._trimmed_outputs(dict(zip(MODEL_INPUTS, checked)))

    def ids(self, input_ids, input_mask, segment_ids):
        return self.outputs(*self.checked(input_ids, input_mask, segment_ids))

    def examples(self, inputs):
        """classify / regress: tf.Examples whose id lists may be unpadded (any length up to
        max_seq_length, the three of one example equally long)."""
        parsed = tf.io.parse_example(inputs, {name: tf.io.RaggedFeature(tf.int64)
                                              for name in MODEL_INPUTS})
        lengths = parsed["input_ids"].row_lengths()
        with tf.control_dependencies([
                tf.debugging.assert_equal(lengths, parsed[name].row_lengths(), message=(
                    f"input_ids and {name} of one example differ in length"))
                for name in MODEL_INPUTS[1:]] + [
                tf.debugging.assert_less_equal(lengths, tf.constant(self.max_seq_length, lengths.dtype),
                                               message="input_ids longer than max_seq_length")]):
            dense = [tf.cast(parsed[name].to_tensor(), tf.int32) for name in MODEL_INPUTS]
        outputs = self.outputs(*self.checked(*dense))
        if self.regression:
            return {signature_methods.REGRESS_OUTPUTS: tf.reshape(outputs["predictions"], [-1])}
        batch = tf.shape(outputs["probabilities"])[0]
        return {signature_methods.CLASSIFY_CLASSES: tf.tile(self.label_names[tf.newaxis], [batch, 1]),
                signature_methods.CLASSIFY_SCORES: outputs["probabilities"]}

    @property
    def examples_signature(self):
        """(name, TF Serving method) of the Classify or Regress signature."""
        if self.regression:
            return "regress", signature_methods.REGRESS
        return "classify", signature_methods.CLASSIFY

    def text(self, text_a, text_b):
        packed = tf_tokenization.pack_inputs(
            [self.tokenizer.tokenize(self.tokenizer.leading_words(text, self.max_seq_length))
             for text in (text_a, text_b)],
            self.max_seq_length, self.cls_id, self.sep_id)
        return self._trimmed_outputs(packed)

    def _text_of_length(self, length):
        """A sentence whose packed `[CLS] text [SEP]` is `length` pieces or a little less."""
        words = max(1, length - 2)
        while words > 1:
            text = " ".join(["the"] * words)
            pieces = int(self.tokenizer.tokenize(tf.constant([text])).row_lengths()[0])
            if pieces + 2 <= length:
                return text
            words -= max(1, (pieces + 2 - length) // 2)
        return "the"

    def warmup_logs(self, include_text=True, signatures=None):
        """One request per signature and length bucket (batch 1): every sequence length a
        signature runs the model at is optimised before the version is served. `signatures`:
        only those (None: all)."""
        logs = []
        name = self.examples_signature[0]
        for length in self.batching.lengths(self.max_seq_length):  # the lengths batches are cut to
            inputs = warmup_requests.ids_inputs([1, length])
            ids, mask, segments = (inputs[name] for name in MODEL_INPUTS)
            logs.append(warmup_requests.predict_log("ids", inputs))
            padded = {key: np.pad(value[0], (0, self.max_seq_length - length))
                      for key, value in zip(MODEL_INPUTS, (ids, mask, segments))}
            logs.append(warmup_requests.predict_log("serving_default", {"serialized_example": np.array(
                [warmup_requests.int_example(padded).SerializeToString()], dtype=object)}))
            logs.append(warmup_requests.examples_log(name, [warmup_requests.int_example(dict(
                zip(MODEL_INPUTS, (ids[0], mask[0], segments[0]))))], self.regression))
            if include_text and self.tokenizer is not None:
                logs.append(warmup_requests.predict_log("text", {
                    "text_a": warmup_requests.strings(self._text_of_length(length)),
                    "text_b": warmup_requests.strings("")}))
        if signatures is not None:
            logs = [log for log in logs if _log_signature(log) in signatures]
        return logs

    def archive(self, include_text=True):
        """A Keras `ExportArchive` holding the model, the tokenizer (`include_text`) and the
        signatures."""
        dummy = tf.zeros([1, 2], tf.int32)
        self.ids(dummy, dummy, dummy)  # builds the model's variables
        archive = keras.export.ExportArchive()
        archive.track(self.model)
        archive.add_endpoint("serving_default", self.serialized, input_signature=[
            tf.TensorSpec([None], tf.string, name="serialized_example")])
        archive.add_endpoint("ids", self.ids, input_signature=[
            tf.TensorSpec([None, None], tf.int32, name=name)
            for name in MODEL_INPUTS])
        archive.add_endpoint(self.examples_signature[0], self.examples, input_signature=[
            tf.TensorSpec([None], tf.string, name=signature_methods.CLASSIFY_INPUTS)])
        if include_text and self.tokenizer is not None:
            archive.track(self.tokenizer)
            archive.add_endpoint("text", self.text, input_signature=[
                tf.TensorSpec([None], tf.string, name="text_a"),
                tf.TensorSpec([None], tf.string, name="text_b")])
        return archive

    def tflite_archive(self):
        """An `ExportArchive` of the model and TFLITE_SIGNATURES, the signatures TFLite converts."""
        archive = keras.export.ExportArchive()
        archive.track(self.model)
        archive.add_endpoint(TFLITE_SIGNATURES[0], self.ids, input_signature=[
            tf.TensorSpec([None, None], tf.int32, name=name) for name in MODEL_INPUTS])
        return archive


def _log_signature(log):
    kind = log.WhichOneof("log_type")
    return getattr(log, kind).request.model_spec.signature_name


def write_saved_model(signatures, export_dir, include_text=True, with_tflite=False):
    """Writes `<export_dir>/<version>/` atomically, with its TF Serving warm-up requests and,
    `with_tflite`, its int8 `model.tflite` (the warm-up then only of TFLITE_SIGNATURES);
    returns that path."""
    name, method = signatures.examples_signature
    int8 = tflite.Int8File(signatures.tflite_archive, TFLITE_SIGNATURES, {TFLITE_SIGNATURES[0]: (
        tflite.albert_id_limits(signatures.model.config, MODEL_INPUTS))}) if with_tflite else None
    path = versioned.write_archive(
        signatures.archive(include_text), export_dir, {name: method},
        signatures.warmup_logs(include_text, TFLITE_SIGNATURES if with_tflite else None),
        finish=int8)
    if int8:
        int8.log_written(path)
    return path


def export_from_checkpoint(job, checkpoint_path, export_dir, threshold=None,
                           export_precision="float32", include_text=True):
    """Exports the classifier of a `glue.run.ClassifierJob` from a fine-tuned checkpoint,
    batched as the job's run (`Batching.served`), at `export_precision` (EXPORT_PRECISIONS)."""
    policies.check_export_precision(export_precision, EXPORT_PRECISIONS)
    batching = job.batching.served()
    precision = policies.MODEL_POLICIES[export_precision]
    model = load_classifier(job.albert_config, job.num_labels, checkpoint_path, precision,
                            batching.skip_padding)
    tokenizer = cls_id = sep_id = None
    if job.spm_model_file:
        tokenizer = tf_tokenization.InGraphTokenizer(job.spm_model_file, job.do_lower_case)
        cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id
    signatures = ClassifierSignatures(model, job.label_list, job.max_seq_length, job.regression,
                                      tokenizer, cls_id, sep_id, threshold, batching)
    path = write_saved_model(signatures, export_dir, include_text,
                             with_tflite=export_precision == "int8")
    logging.info("Wrote %s: %s SavedModel%s", path,
                 "float32" if precision == "float32" else "bfloat16-weight",
                 " and model.tflite (int8)" if export_precision == "int8" else "")
    return path
