"""Serves an exported model over TensorFlow Serving's REST API, or classifies text once.

  python serve.py --export_dir=OUT/export --model_name=albert --rest_api_port=8501
      Runs `tensorflow_model_server` when it is installed, else the built-in server with the
      same REST API (albert_tf/serving/), which also picks up new versions without a restart.
  python serve.py --export_dir=OUT/export --text="a gripping film" --text="dull and tired"
      Loads the SavedModel in this process and prints one JSON line per sentence from its
      raw-text signature.
"""

import json

from absl import app
from absl import flags
from absl import logging

from albert_tf import cli
from albert_tf import serving

FLAGS = flags.FLAGS
flags.DEFINE_string("export_dir", None, "Export directory: a SavedModel or numeric version subdirectories.")
flags.DEFINE_string("model_name", "albert", "Model name in the REST paths /v1/models/<name>.")
flags.DEFINE_integer("rest_api_port", 8501, "Port of the REST API.", lower_bound=0, upper_bound=65535)
flags.DEFINE_string("host", "127.0.0.1", "Address the built-in server listens on.")
flags.DEFINE_multi_string("text", None, "Classify these sentences once and exit (no server).")
flags.DEFINE_multi_string("text_b", None, "Second sentences for pair tasks, one per --text.")
flags.DEFINE_string("signature_name", "text", "Signature used with --text.")
flags.DEFINE_bool("use_model_server", True, "Use tensorflow_model_server when it is on PATH.")
flags.DEFINE_integer("max_batch_size", serving.DEFAULT_MAX_BATCH_SIZE, "Built-in server: larger "
                     "batches are refused with HTTP 400.", lower_bound=1)
flags.DEFINE_integer("max_body_bytes", serving.DEFAULT_MAX_BODY_BYTES, "Built-in server: larger "
                     "request bodies are refused with HTTP 413.", lower_bound=1)
flags.DEFINE_float("request_timeout_secs", serving.DEFAULT_REQUEST_TIMEOUT_SECS, "Built-in "
                   "server: a connection idle this long (a stalled upload) is closed.",
                   lower_bound=0.1)
flags.DEFINE_integer("num_versions", serving.DEFAULT_NUM_VERSIONS, "Built-in server: how many of "
                     "the newest versions under --export_dir are served at once.", lower_bound=1)
flags.DEFINE_float("file_system_poll_wait_seconds", serving.DEFAULT_POLL_SECS, "Built-in server: "
                   "how often --export_dir is rescanned for new versions (TF Serving's flag).",
                   lower_bound=0.05)
flags.mark_flag_as_required("export_dir")


def classify_once():
    model_dir, version = serving.resolve_model_dir(FLAGS.export_dir)
    runner = serving.ModelRunner(model_dir, FLAGS.model_name, version or 1)
    texts_b = FLAGS.text_b or [""] * len(FLAGS.text)
    if len(texts_b) != len(FLAGS.text):
        raise app.UsageError(f"--text_b given {len(texts_b)} times, --text {len(FLAGS.text)} times")
    instances = [{"text_a": a, "text_b": b} for a, b in zip(FLAGS.text, texts_b)]
    result = runner.predict({"signature_name": FLAGS.signature_name, "instances": instances})
    for instance, prediction in zip(instances, result["predictions"]):
        print(json.dumps({"text_a": instance["text_a"], "text_b": instance["text_b"], **prediction}))


def main(argv):
    del argv
    if FLAGS.text:
        classify_once()
        return
    command = serving.model_server_command(FLAGS.export_dir, FLAGS.model_name, FLAGS.rest_api_port)
    if FLAGS.use_model_server and command:
        logging.info("starting %s", " ".join(command))
        serving.run_model_server(command)
        return
    server = serving.start_python_server(
        FLAGS.export_dir, FLAGS.model_name, FLAGS.rest_api_port, FLAGS.host,
        FLAGS.max_batch_size, FLAGS.max_body_bytes, FLAGS.request_timeout_secs,
        FLAGS.num_versions, FLAGS.file_system_poll_wait_seconds)
    logging.info("serving %s on http://%s:%d/v1/models/%s (built-in TF Serving REST API)",
                 FLAGS.export_dir, *server.server_address, FLAGS.model_name)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.shutdown()


def entry():
    """Console entry point (`pip install` puts it on PATH as `albert_serve`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
