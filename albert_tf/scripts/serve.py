"""Serves an exported model over TensorFlow Serving's REST and gRPC APIs, or classifies text once.

  python serve.py --model_base_path=OUT/export --model_name=albert --rest_api_port=8501 --port=8500
      Runs `tensorflow_model_server` when it is installed, else the built-in server with the
      same REST and gRPC APIs and TF Serving's flags (albert_tf/serving/): version policy,
      load retries, warm-up, batching. `--export_dir` is the older name of --model_base_path.
      SIGTERM or SIGINT shut it down gracefully (--shutdown_grace_period_secs).
  python serve.py --export_dir=OUT/export --text="a gripping film" --text="dull and tired"
      Loads the SavedModel in this process and prints one JSON line per sentence from its
      raw-text signature.
"""

import json

from absl import app
from absl import logging

from albert_tf import cli, errors
from albert_tf import serving
from albert_tf.serving import rest_json, server_core

DEFAULTS = serving.ServerOptions()


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("export_dir", None, "Export directory: a SavedModel or numeric version "
                  "subdirectories (the same as --model_base_path).")
    define.string("model_base_path", None, "TF Serving's name of --export_dir.")
    define.string("model_name", "albert", "Model name in the REST paths /v1/models/<name> and "
                  "gRPC ModelSpecs.")
    define.integer("rest_api_port", 8501, "Port of the REST API.", lower_bound=0, upper_bound=65535)
    define.string("model_config_file", None, "Built-in server: a text-format ModelServerConfig "
                  "(TF Serving's flag): several models, version policies, version labels; "
                  "instead of --model_base_path.")
    define.integer("model_config_file_poll_wait_seconds", 0, "Built-in server: reread "
                   "--model_config_file this often (0: never; TF Serving's flag).", lower_bound=0)
    define.bool("allow_version_labels_for_unavailable_models", False, "Built-in server: let "
                "the model config give a new version label to a version not yet AVAILABLE, as "
                "at start-up (TF Serving's flag); a label in use still moves only to an "
                "AVAILABLE version.")
    define.integer("port", 8500, "Port of the gRPC API (TF Serving's flag and default); 0: any "
                   "free port.", lower_bound=0, upper_bound=65535)
    define.string("grpc_socket_path", "", "Also serve gRPC on this Unix socket (TF Serving's "
                  "flag).")
    define.string("grpc_channel_arguments", "", "Comma-separated key=value gRPC server channel "
                  "arguments, e.g. grpc.max_connection_age_ms=2000 (TF Serving's flag).")
    define.string("ssl_config_file", "", "Text-format SSLConfig (server_key, server_cert, "
                  "custom_ca, client_verify): serve gRPC over TLS (TF Serving's flag).")
    define.string("host", "127.0.0.1", "Address the built-in server listens on.")
    define.multi_string("text", None, "Classify these sentences once and exit (no server).")
    define.multi_string("text_b", None, "Second sentences for pair tasks, one per --text. "
                        "An export does not record whether its task had pairs: a single-sentence "
                        "model (SST-2, CoLA) given --text_b answers from a segment it never saw.")
    define.string("signature_name", "text", "Signature used with --text.")
    define.bool("use_model_server", True, "Use tensorflow_model_server when it is on PATH.")
    define.integer("max_batch_size", DEFAULTS.max_batch_size, "Built-in server: larger "
                   "batches are refused with HTTP 400.", lower_bound=1)
    define.integer("max_body_bytes", DEFAULTS.max_body_bytes, "Built-in server: larger "
                   "request bodies are refused with HTTP 413.", lower_bound=1)
    define.float("request_timeout_secs", DEFAULTS.request_timeout_secs, "Built-in "
                 "server: a connection idle this long (a stalled upload) is closed.",
                 lower_bound=0.1)
    define.integer("num_versions", DEFAULTS.num_versions, "Built-in server: how many of "
                   "the newest loadable versions are served at once (TF Serving's default "
                   "policy: latest 1).", lower_bound=1)
    define.integer("max_num_load_retries", DEFAULTS.max_num_load_retries, "Built-in "
                   "server: retries of a failed version load (TF Serving's flag).", lower_bound=0)
    define.integer("load_retry_interval_micros", int(DEFAULTS.load_retry_interval_secs
                                                      * 1e6),
                   "Built-in server: microseconds between load retries (TF Serving's flag).",
                   lower_bound=0)
    define.bool("enable_model_warmup", True, "Built-in server: replay the version's "
                "assets.extra/tf_serving_warmup_requests before serving it (TF Serving's flag).")
    define.bool("prefer_tflite_model", False, "Serve a version from the model.tflite in its "
                "directory (an --export_precision=int8 export) instead of its saved_model.pb, "
                "through the same API, with the TFLite file's signatures; a version without one "
                "is served from saved_model.pb (TF Serving's flag and behaviour).")
    define.bool("enable_batching", False, "Built-in server: join concurrent requests into one "
                "model call (TF Serving's flag).")
    define.string("batching_parameters_file", None, "Built-in server: text-format "
                  "BatchingParameters (max_batch_size, batch_timeout_micros, "
                  "max_enqueued_batches, num_batch_threads, allowed_batch_sizes, "
                  "pad_variable_length_inputs); implies --enable_batching.")
    define.integer("max_connections", DEFAULTS.max_connections, "Built-in server: REST "
                   "connections above this are answered 503 at once.", lower_bound=1)
    define.integer("max_concurrent_model_calls", DEFAULTS.max_concurrent_model_calls,
                   "Built-in server: graph calls running at once (default: the number of CPUs); "
                   "the others wait in arrival order (0: no limit).",
                   lower_bound=0)
    define.float("header_timeout_secs", DEFAULTS.header_timeout_secs, "Built-in server: "
                 "a REST connection whose request headers take longer is closed.",
                 lower_bound=0.1)
    define.float("shutdown_grace_period_secs", DEFAULTS.shutdown_grace_period_secs,
                 "Built-in server: on SIGTERM or SIGINT, new connections and calls are refused "
                 "and the requests in flight get this long to finish; those still running then "
                 "are answered 503 (REST) and UNAVAILABLE (gRPC), and the server exits 0. The "
                 "default stays below Kubernetes' 30 s terminationGracePeriodSeconds.",
                 lower_bound=0)
    define.float("file_system_poll_wait_seconds", DEFAULTS.file_system_poll_wait_seconds, "Built-in server: "
                 "how often --export_dir is rescanned for new versions (TF Serving's flag).",
                 lower_bound=0.05)


def base_path(flag_values):
    """--model_base_path or --export_dir (one of them, or both equal)."""
    paths = {path for path in (flag_values.model_base_path, flag_values.export_dir) if path}
    if len(paths) != 1:
        raise errors.UserInputError("give the export directory as --model_base_path (or "
                                 f"--export_dir), once; got {sorted(paths) or 'neither'}")
    return paths.pop()


def batching_parameters(flag_values):
    """The BatchingParameters of --batching_parameters_file, defaults with --enable_batching,
    None without batching."""
    path = flag_values.batching_parameters_file
    if path is None:
        return serving.BatchingParameters() if flag_values.enable_batching else None
    try:
        with open(path, encoding="utf-8") as reader:
            return serving.BatchingParameters.parse(reader.read(), f"--batching_parameters_file={path}")
    except OSError as error:
        raise errors.MissingFileError(f"--batching_parameters_file={path}: {error.strerror}") from error
    except ValueError as error:
        raise errors.UserInputError(str(error)) from error


def server_options(flag_values, export_dir, parameters):
    """The built-in server's `ServerOptions` from the flags (the export directory and batching
    parameters already read from them)."""
    return serving.ServerOptions(
        model_base_path=export_dir, model_name=flag_values.model_name,
        model_config_file=flag_values.model_config_file,
        model_config_file_poll_wait_seconds=flag_values.model_config_file_poll_wait_seconds,
        allow_version_labels_for_unavailable_models=(
            flag_values.allow_version_labels_for_unavailable_models),
        rest_api_port=flag_values.rest_api_port, grpc_port=flag_values.port,
        host=flag_values.host, grpc_socket_path=flag_values.grpc_socket_path or None,
        grpc_channel_arguments=flag_values.grpc_channel_arguments,
        ssl_config_file=flag_values.ssl_config_file or None,
        num_versions=flag_values.num_versions,
        file_system_poll_wait_seconds=flag_values.file_system_poll_wait_seconds,
        max_num_load_retries=flag_values.max_num_load_retries,
        load_retry_interval_secs=flag_values.load_retry_interval_micros / 1e6,
        enable_model_warmup=flag_values.enable_model_warmup,
        prefer_tflite_model=flag_values.prefer_tflite_model, batching_parameters=parameters,
        max_batch_size=flag_values.max_batch_size, max_body_bytes=flag_values.max_body_bytes,
        request_timeout_secs=flag_values.request_timeout_secs,
        header_timeout_secs=flag_values.header_timeout_secs,
        max_connections=flag_values.max_connections,
        max_concurrent_model_calls=flag_values.max_concurrent_model_calls or None,
        shutdown_grace_period_secs=flag_values.shutdown_grace_period_secs)


def classify_once(flag_values):
    """--text: one request to the version the server core serves (TF Serving's version
    policy, a version that fails to load passed over as the server passes it over), the
    predictions printed as JSON lines."""
    texts_b = flag_values.text_b or [""] * len(flag_values.text)
    if len(texts_b) != len(flag_values.text):
        raise app.UsageError(f"--text_b given {len(texts_b)} times, --text "
                             f"{len(flag_values.text)} times")
    core = server_core.ServerCore(serving.ServerOptions(
        model_base_path=base_path(flag_values), model_name=flag_values.model_name,
        max_num_load_retries=0, enable_model_warmup=False,
        prefer_tflite_model=flag_values.prefer_tflite_model))
    instances = [{"text_a": a, "text_b": b} for a, b in zip(flag_values.text, texts_b)]
    try:
        result = rest_json.predict({"signature_name": flag_values.signature_name, "instances":
                                    instances}, lambda: core.servable(flag_values.model_name))
    finally:
        core.stop()
    for instance, prediction in zip(instances, result["predictions"]):
        print(json.dumps({"text_a": instance["text_a"], "text_b": instance["text_b"], **prediction}))


def run(flag_values):
    """The whole script on parsed flags."""
    if flag_values.text:
        classify_once(flag_values)
        return
    config_file = flag_values.model_config_file
    export_dir = None if config_file else base_path(flag_values)
    parameters = batching_parameters(flag_values)
    extra = [f"--enable_model_warmup={str(flag_values.enable_model_warmup).lower()}",
             f"--max_num_load_retries={flag_values.max_num_load_retries}",
             f"--load_retry_interval_micros={flag_values.load_retry_interval_micros}"]
    if flag_values.prefer_tflite_model:
        extra.append("--prefer_tflite_model=true")
    if parameters is not None:
        extra.append("--enable_batching=true")
        if flag_values.batching_parameters_file:
            extra.append(f"--batching_parameters_file={flag_values.batching_parameters_file}")
    for name in ("grpc_socket_path", "grpc_channel_arguments", "ssl_config_file"):
        if flag_values[name].value:
            extra.append(f"--{name}={flag_values[name].value}")
    if flag_values.allow_version_labels_for_unavailable_models:
        extra.append("--allow_version_labels_for_unavailable_models=true")
    if config_file:
        extra += [f"--model_config_file={config_file}", "--model_config_file_poll_wait_seconds="
                  f"{flag_values.model_config_file_poll_wait_seconds}"]
    command = serving.model_server_command(export_dir, flag_values.model_name,
                                           flag_values.rest_api_port, flag_values.port, extra)
    if flag_values.use_model_server and command:
        logging.info("starting %s", " ".join(command))
        serving.run_model_server(command)
        return
    server = serving.start_python_server(server_options(flag_values, export_dir, parameters))
    logging.info("serving %s on http://%s:%d (REST) and gRPC port %d%s", config_file or export_dir,
                 *server.server_address, server.grpc.port,
                 f" and socket {flag_values.grpc_socket_path}" if flag_values.grpc_socket_path
                 else "")
    server.serve_until_signalled()


def entry():
    """Console entry point (`pip install` puts it on PATH as `albert_serve`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
