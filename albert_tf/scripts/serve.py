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


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("export_dir", None, "Export directory: a SavedModel or numeric version subdirectories.")
    define.string("model_name", "albert", "Model name in the REST paths /v1/models/<name>.")
    define.integer("rest_api_port", 8501, "Port of the REST API.", lower_bound=0, upper_bound=65535)
    define.string("host", "127.0.0.1", "Address the built-in server listens on.")
    define.multi_string("text", None, "Classify these sentences once and exit (no server).")
    define.multi_string("text_b", None, "Second sentences for pair tasks, one per --text.")
    define.string("signature_name", "text", "Signature used with --text.")
    define.bool("use_model_server", True, "Use tensorflow_model_server when it is on PATH.")
    define.integer("max_batch_size", serving.DEFAULT_MAX_BATCH_SIZE, "Built-in server: larger "
                   "batches are refused with HTTP 400.", lower_bound=1)
    define.integer("max_body_bytes", serving.DEFAULT_MAX_BODY_BYTES, "Built-in server: larger "
                   "request bodies are refused with HTTP 413.", lower_bound=1)
    define.float("request_timeout_secs", serving.DEFAULT_REQUEST_TIMEOUT_SECS, "Built-in "
                 "server: a connection idle this long (a stalled upload) is closed.",
                 lower_bound=0.1)
    define.integer("num_versions", serving.DEFAULT_NUM_VERSIONS, "Built-in server: how many of "
                   "the newest versions under --export_dir are served at once.", lower_bound=1)
    define.float("file_system_poll_wait_seconds", serving.DEFAULT_POLL_SECS, "Built-in server: "
                 "how often --export_dir is rescanned for new versions (TF Serving's flag).",
                 lower_bound=0.05)
    flags.mark_flag_as_required("export_dir", flag_values=flag_values)


def classify_once(flag_values):
    """--text: one request to the export, the predictions printed as JSON lines."""
    model_dir, version = serving.resolve_model_dir(flag_values.export_dir)
    runner = serving.ModelRunner(model_dir, flag_values.model_name, version or 1)
    texts_b = flag_values.text_b or [""] * len(flag_values.text)
    if len(texts_b) != len(flag_values.text):
        raise app.UsageError(f"--text_b given {len(texts_b)} times, --text "
                             f"{len(flag_values.text)} times")
    instances = [{"text_a": a, "text_b": b} for a, b in zip(flag_values.text, texts_b)]
    result = runner.predict({"signature_name": flag_values.signature_name, "instances": instances})
    for instance, prediction in zip(instances, result["predictions"]):
        print(json.dumps({"text_a": instance["text_a"], "text_b": instance["text_b"], **prediction}))


def run(flag_values):
    """The whole script on parsed flags."""
    if flag_values.text:
        classify_once(flag_values)
        return
    command = serving.model_server_command(flag_values.export_dir, flag_values.model_name,
                                           flag_values.rest_api_port)
    if flag_values.use_model_server and command:
        logging.info("starting %s", " ".join(command))
        serving.run_model_server(command)
        return
    server = serving.start_python_server(
        flag_values.export_dir, flag_values.model_name, flag_values.rest_api_port, flag_values.host,
        flag_values.max_batch_size, flag_values.max_body_bytes, flag_values.request_timeout_secs,
        flag_values.num_versions, flag_values.file_system_poll_wait_seconds)
    logging.info("serving %s on http://%s:%d/v1/models/%s (built-in TF Serving REST API)",
                 flag_values.export_dir, *server.server_address, flag_values.model_name)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.shutdown()


def entry():
    """Console entry point (`pip install` puts it on PATH as `albert_serve`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
