"""SavedModel export of a fine-tuned RACE model, for TensorFlow Serving or `tf.saved_model.load`.

The original run_race.py had no export. Signatures:
  serving_default  int32 `input_ids`, `input_mask`, `segment_ids` [batch, 4, seq_length]: the
                   four `[CLS] article [SEP] question+option [SEP]` sequences of
                   `features.FeatureConverter` (seq_length <= max_position_embeddings).
  text             string `article` [batch], `question` [batch], `options` [batch, 4], encoded
                   in the graph exactly as the Python path (`graph_features.RaceTextEncoder`)
                   with the run's max_seq_length / max_qa_length. Only with a SentencePiece
                   model.
Both return `logits` [batch, 4] float32 (the choice scores), `probabilities` [batch, 4] float32
(their softmax) and `predictions` [batch] int32 (0..3 for A..D). The model skips the padding
inside each batch (`modeling.packing`): its dense layers see only real tokens.
The SavedModel goes to `<export_dir>/<version>/` with a numeric version (seconds since the epoch,
as the original estimator exports; TF Serving serves the highest), written under a temporary
name and renamed when complete. `--export_precision=int8` also writes a dynamic-range int8
`model.tflite` of `serving_default` into the version (`export.tflite`; served with
`--prefer_tflite_model`), and the version's warm-up then holds only `serving_default` requests.
"""


import keras
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.text import tf_tokenization
from albert_tf.export import policies
from albert_tf.export import tflite
from albert_tf.export import versioned
from albert_tf.export import warmup_requests
from albert_tf.modeling import encoder, multiple_choice
from albert_tf.race import graph_features, reader
from albert_tf.training import length_buckets


def _scores(model, inputs):
    logits = tf.cast(model(inputs, training=False)["logits"], tf.float32)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def serving_archive(model, text_encoder=None):
    """A Keras `ExportArchive` with the endpoints above (Keras 3 models are exported through
    it: `tf.saved_model.save` would trace the model's float default signature); `text` only
    with a `graph_features.RaceTextEncoder`."""
    ids_spec = tf.TensorSpec([None, reader.NUM_CHOICES, None], tf.int32)

    def serve_ids(input_ids, input_mask, segment_ids):
        return _scores(model, {"input_ids": input_ids, "input_mask": input_mask,
                               "segment_ids": segment_ids})

    if not model.built:
        dummy = tf.zeros([1, reader.NUM_CHOICES, 2], tf.int32)
        model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy}, training=False)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", serve_ids,
                         input_signature=[ids_spec, ids_spec, ids_spec])
    if text_encoder is not None:
        archive.track(text_encoder.tokenizer)

        def serve_text(article, question, options):
            return _scores(model, text_encoder(article, question, options))

        archive.add_endpoint("text", serve_text, input_signature=[
            tf.TensorSpec([None], tf.string, name="article"),
            tf.TensorSpec([None], tf.string, name="question"),
            tf.TensorSpec([None, reader.NUM_CHOICES], tf.string, name="options")])
    return archive


def warmup_logs(model, text_encoder=None, lengths=None):
    """TF Serving warm-up requests: `serving_default` (one question, four options) at each of
    `lengths` (the run's: `Batching.lengths`; default: every length bucket up to the text
    encoder's max_seq_length, else max_position_embeddings), `text` once."""
    if lengths is None:
        lengths = length_buckets.default_buckets(
            text_encoder.max_seq_length if text_encoder is not None
            else model.config.max_position_embeddings)
    logs = [warmup_requests.predict_log("serving_default", warmup_requests.ids_inputs(
        [1, reader.NUM_CHOICES, length])) for length in lengths]
    if text_encoder is not None:
        options = warmup_requests.strings(*(f"option {i}" for i in range(reader.NUM_CHOICES)))
        logs.append(warmup_requests.predict_log("text", {
            "article": warmup_requests.strings("A short article about a warm model."),
            "question": warmup_requests.strings("What is the model?"),
            "options": options.reshape(1, reader.NUM_CHOICES)}))
    return logs


def load_model(albert_config, checkpoint_path, skip_padding=True):
    """A float32 `AlbertMultipleChoice` with every variable (heads too) from the checkpoint;
    `skip_padding`: the served batching's (`Batching.served`)."""
    model = multiple_choice.AlbertMultipleChoice(
        encoder.AlbertEncoder(albert_config, skip_padding=skip_padding),
        num_choices=reader.NUM_CHOICES)
    checkpoints.load_complete(model.checkpoint_variables(), checkpoint_path,
                              "a fine-tuned RACE checkpoint")
    return model


EXPORT_PRECISIONS = ("float32", "int8")
TFLITE_SIGNATURES = ("serving_default",)  # the ids signature; `text` needs TensorFlow ops


def export_saved_model(model, export_dir, text_encoder=None, warmup_lengths=None,
                       with_tflite=False):
    """Writes `<export_dir>/<version>/` atomically, warmed at `warmup_lengths` (see
    `warmup_logs`), with its int8 `model.tflite` when `with_tflite`; returns that path."""
    logs = warmup_logs(model, text_encoder, warmup_lengths)
    int8 = None
    if with_tflite:
        int8 = tflite.Int8File(lambda: serving_archive(model), TFLITE_SIGNATURES,
                               {TFLITE_SIGNATURES[0]: tflite.albert_id_limits(model.config)})
        logs = int8.warmup_logs(logs)
    path = versioned.write_archive(serving_archive(model, text_encoder), export_dir,
                                   warmup_logs=logs, finish=int8)
    if int8:
        int8.log_written(path)
    return path


def export_from_checkpoint(job, checkpoint_path, export_dir, include_text=True,
                           export_precision="float32"):
    """Exports the model of a `race.run.RaceJob` from a fine-tuned checkpoint; with a
    SentencePiece model and `include_text` the SavedModel also has the raw-text signature
    `text` (the only one that needs tensorflow_text's custom ops). Batched and warmed up as
    the job's run (`Batching.served`: its buckets, or max_seq_length alone).
    `export_precision`: EXPORT_PRECISIONS (int8: also `model.tflite`)."""
    policies.check_export_precision(export_precision, EXPORT_PRECISIONS, " for RACE")
    batching = job.batching.served()
    model = load_model(job.albert_config, checkpoint_path, batching.skip_padding)
    text_encoder = None
    if job.settings.spm_model_file and include_text:
        tokenizer = tf_tokenization.InGraphTokenizer(job.settings.spm_model_file,
                                                     job.settings.do_lower_case)
        text_encoder = graph_features.RaceTextEncoder(
            tokenizer, job.max_seq_length, job.settings.max_qa_length)
    return export_saved_model(model, export_dir, text_encoder,
                              batching.lengths(job.max_seq_length),
                              with_tflite=export_precision == "int8")
