"""Starting a server: `tensorflow_model_server` when it is installed, else the built-in one: the
REST app on uvicorn (a maintained asyncio HTTP/1.1 server: keep-alive, a real listen backlog,
HTTP parsing errors answered by h11) and the gRPC API on grpcio, over the same loaded versions.

Shutdown (SIGTERM, as every rolling update of a deployment sends, or SIGINT) is graceful: both
front ends stop accepting connections and calls at once, the requests in flight are finished
within the grace period, and the ones still running at its end are answered, 503 on REST and
UNAVAILABLE on gRPC, never left without an answer; then the process exits 0."""

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref

from absl import logging
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from albert_tf.serving import batching
from albert_tf.serving import grpc_listen
from albert_tf.serving import grpc_server
from albert_tf.serving import metrics as metrics_lib
from albert_tf.serving import model_config
from albert_tf.serving import rest_app
from albert_tf.serving import tflite_servable
from albert_tf.serving import versions as versions_lib
from albert_tf.serving import warmup
from albert_tf import errors
from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, GRAPH_CALLS, ModelRunner

LISTEN_BACKLOG = 2048
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_HEADER_TIMEOUT_SECS = 10.0
DEFAULT_MAX_CONCURRENT_MODEL_CALLS = os.cpu_count() or 1
# How long a Python thread may hold the GIL while another waits for it (Python's default: 5 ms).
# A graph call needs the GIL for moments between its kernels (inputs, the call's Python,
# outputs); with dozens of request threads busy in Python, each of those moments waited up to
# 5 ms, leaving the CPU idle: one batch thread answered 0.70-0.79 of the in-process rate at its
# batch size, 0.89-0.95 with 0.5 ms (bench/bench_rest_server.py, bench/RESULTS.md).
GIL_SWITCH_INTERVAL_SECS = 0.0005
# Kubernetes sends SIGTERM, then SIGKILL 30 s later (terminationGracePeriodSeconds' default):
# 25 s of draining leaves the process time to answer the rest and exit before that.
DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS = 25.0


class StartupError(errors.UserInputError):
    """The server cannot start: a port, file, model or version it was given is unusable (one
    line, exit 2, naming it)."""


class JsonErrorH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, answering a request it cannot parse (bad request line,
    headers over h11's limit) with TF Serving's JSON error body instead of plain text, and
    closing a connection whose request headers do not arrive within `header_timeout_secs`
    (uvicorn itself only times out idle keep-alive connections)."""

    header_timeout_secs = DEFAULT_HEADER_TIMEOUT_SECS

    def connection_made(self, transport):
        super().connection_made(transport)
        self._header_timer = self.loop.call_later(self.header_timeout_secs, self._header_timeout)

    def data_received(self, data):
        super().data_received(data)
        waiting_for_headers = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting_for_headers and self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_secs,
                                                      self._header_timeout)
        elif not waiting_for_headers and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_lost(self, exc):
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def _header_timeout(self):
        self._header_timer = None
        idle = self.cycle is None or self.cycle.response_complete
        if self.conn.their_state is h11.IDLE and idle and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg):
        self._send_error(400, b"Bad Request", f"Malformed HTTP request: {msg}")

    def answer_unfinished(self, message):
        """The shutdown grace period is over: a request still running is answered 503 with
        `message` (the application's late answer is dropped), the connection closed."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete or self.transport.is_closing():
            return
        cycle.disconnected = True  # uvicorn discards what the application sends from now on
        if cycle.response_started:  # cannot happen with whole-body responses; still closed
            self.transport.close()
        else:
            self._send_error(503, b"Service Unavailable", message)

    def _send_error(self, status, reason, message):
        body = json.dumps({"error": message}).encode("utf-8")
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                   (b"content-length", str(len(body)).encode())]
        for event in (h11.Response(status_code=status, headers=headers, reason=reason),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose shutdown (listeners closed, idle connections closed, the others
    closed once answered) ends after `grace_secs`: requests still running then are answered
    503 by their connection (`JsonErrorH11Protocol.answer_unfinished`)."""

    grace_secs = DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS

    async def shutdown(self, sockets=None):
        message = (f"the server is shutting down: the request did not finish within "
                   f"--shutdown_grace_period_secs={self.grace_secs:g}")

        def answer_unfinished():
            for connection in list(self.server_state.connections):
                connection.answer_unfinished(message)
        timer = asyncio.get_running_loop().call_later(self.grace_secs, answer_unfinished)
        try:
            await super().shutdown(sockets)
        finally:
            timer.cancel()


class RestServer:
    """The REST front end: uvicorn running `app` on a background thread. `server_address` is
    the bound (host, port); `shutdown(grace_secs)` stops accepting, finishes open requests and
    answers 503 to those still running after `grace_secs`."""

    def __init__(self, app, host, port, request_timeout_secs,
                 max_connections=DEFAULT_MAX_CONNECTIONS,
                 header_timeout_secs=DEFAULT_HEADER_TIMEOUT_SECS):
        protocol = type("H11Protocol", (JsonErrorH11Protocol,),
                        {"header_timeout_secs": header_timeout_secs})
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as error:
            listener.close()
            raise StartupError(f"--rest_api_port={port}: the REST server cannot listen on "
                               f"{host}:{port}: {error.strerror}") from error
        self.server_address = listener.getsockname()[:2]
        # uvicorn answers 503 once its open connections reach limit_concurrency, this one
        # included: + 1 lets max_connections connections be served.
        config = uvicorn.Config(app, http=protocol, lifespan="off",
                                backlog=LISTEN_BACKLOG, access_log=False,
                                log_level="warning", limit_concurrency=max_connections + 1,
                                timeout_keep_alive=max(1, round(request_timeout_secs)),
                                timeout_graceful_shutdown=None)  # DrainingServer's own deadline
        self._server = DrainingServer(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [listener]},
                                        daemon=True, name="rest-server")
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the REST server did not start on {host}:{port}")
            time.sleep(0.01)

    def running(self):
        return self._thread.is_alive()

    def shutdown(self, grace_secs=DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS):
        self._server.grace_secs = grace_secs
        self._server.should_exit = True
        # Once every connection is answered and closed the server stops; a model call still
        # running past the deadline may hold its thread: not waited for.
        deadline = time.monotonic() + grace_secs + 5
        while self._server.server_state.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        self._thread.join(max(0.0, min(1.0, deadline - time.monotonic())))


class ModelServer:
    """The running built-in server: the served models (`lifecycle`, a ServedVersions or
    ConfiguredModels, TF Serving's server core) and its front ends, `rest` and `grpc` (None
    when off). `server_address` is REST's bound (host, port)."""

    def __init__(self, lifecycle, rest, grpc):
        self.lifecycle, self.rest, self.grpc = lifecycle, rest, grpc
        self.server_address = rest.server_address

    def serve_until_signalled(self, grace_secs=DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS):
        """Serves until SIGTERM or SIGINT, then shuts down within `grace_secs` and ends the
        process with exit status 0. The exit does not wait for a model call still running
        past the deadline (its request was answered 503 / UNAVAILABLE): Python would join its
        thread first, and a stuck call would then hold the process until SIGKILL."""
        received = []
        stop = threading.Event()

        def on_signal(signum, frame):
            del frame
            received.append(signal.Signals(signum).name)
            stop.set()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, on_signal)
        while not stop.wait(0.5) and self.rest.running():
            pass
        logging.info("%s: no new connections or calls; finishing the requests in flight "
                     "within %gs", received[0] if received else "REST server stopped",
                     grace_secs)
        self.shutdown(grace_secs)
        logging.info("shut down")
        logging.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def shutdown(self, grace_secs=DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS):
        """Both front ends stop taking connections and calls at once; requests in flight are
        finished within `grace_secs`, those still running then answered 503 (REST) and
        UNAVAILABLE (gRPC: grpcio cancels them with that code); then the model polling stops."""
        grpc_stopped = self.grpc.stop(grace_secs) if self.grpc is not None else None
        self.rest.shutdown(grace_secs)
        if grpc_stopped is not None:
            grpc_stopped.wait(grace_secs + 5)
        self.lifecycle.stop_polling()


class ModelRouter:
    """The REST API over several models (--model_config_file): each request goes to the
    `RestApp` of the model its path names, `/labels/L` turned into the label's `/versions/N`
    (400 for a label the config does not define, as TF Serving answers), except in a status
    call, which ignores the label and lists every version (GetModelStatus); a model a reload
    removed still answers its status (versions END). Other paths (metrics, unknown models) go
    to any one of them, which answers them as for a single model."""

    _MODEL = re.compile(r"/v1/models/([^/:]+)")
    _LABEL = re.compile(r"(/v1/models/[^/:]+)/labels/([^/:]+)")

    def __init__(self, configured, make_app):
        self.configured, self._make_app = configured, make_app
        self._apps = weakref.WeakKeyDictionary()  # a removed model's app goes with it

    async def __call__(self, scope, receive, send):
        models = self.configured.models
        match = self._MODEL.match(scope.get("path", ""))
        name = match.group(1) if match else None
        versions = models.get(name) or self.configured.retired.get(name)
        if versions is None:
            versions = next(iter(models.values()), None)
        if versions is None:
            response = rest_app.JSONResponse({"error": "no model is configured"}, status_code=404)
            await response(scope, receive, send)
            return
        label = self._LABEL.match(scope.get("path", ""))
        rest = scope["path"][label.end():] if label else ""
        if label and scope.get("method") == "GET" and rest == "":  # status: label ignored
            path = label.group(1)
            scope = {**scope, "path": path, "raw_path": path.encode()}
        elif label and label.group(2) in versions.labels:  # the label's version, by number
            version = versions.labels[label.group(2)]
            path = f"{label.group(1)}/versions/{version}{rest}"
            scope = {**scope, "path": path, "raw_path": path.encode()}
        elif label:
            response = rest_app.JSONResponse(
                {"error": f"Unrecognized servable version label: {label.group(2)}"}, status_code=400)
            await response(scope, receive, send)
            return
        if versions not in self._apps:
            self._apps[versions] = self._make_app(versions)
        await self._apps[versions](scope, receive, send)


def version_loader(enable_model_warmup=True, batching_parameters=None, prefer_tflite_model=False):
    """The `ServedVersions` loader: a `ModelRunner` (its `model.tflite`'s with
    `prefer_tflite_model`, `tflite_servable`), given a batcher when batching is on and warmed
    up from its `assets.extra` before it is served."""
    make_runner = tflite_servable.load_runner if prefer_tflite_model else ModelRunner

    def load(model_dir, model_name, version, max_batch_size):
        runner = make_runner(model_dir, model_name, version, max_batch_size)
        if batching_parameters is not None:
            runner.batcher = batching.Batcher(batching_parameters, runner.call)
        if enable_model_warmup:
            warmup.replay(runner)
        return runner
    return load


def start_python_server(export_dir, model_name, port, host="127.0.0.1",
                        max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                        max_body_bytes=rest_app.DEFAULT_MAX_BODY_BYTES,
                        request_timeout_secs=rest_app.DEFAULT_REQUEST_TIMEOUT_SECS,
                        num_versions=versions_lib.DEFAULT_NUM_VERSIONS,
                        poll_secs=versions_lib.DEFAULT_POLL_SECS, grpc_port=None,
                        max_num_load_retries=versions_lib.DEFAULT_MAX_NUM_LOAD_RETRIES,
                        load_retry_interval_secs=versions_lib.DEFAULT_LOAD_RETRY_INTERVAL_SECS,
                        enable_model_warmup=True, batching_parameters=None,
                        max_connections=DEFAULT_MAX_CONNECTIONS,
                        header_timeout_secs=DEFAULT_HEADER_TIMEOUT_SECS,
                        model_config_file=None, config_poll_secs=0,
                        max_concurrent_model_calls=DEFAULT_MAX_CONCURRENT_MODEL_CALLS,
                        allow_version_labels_for_unavailable_models=False,
                        grpc_channel_arguments="", grpc_socket_path=None, ssl_config_file=None,
                        prefer_tflite_model=False):
    """Loads the newest `num_versions` versions under `export_dir` (or the models of
    `model_config_file`, TF Serving's ModelServerConfig, reread every `config_poll_secs`), serves
    them over REST on host:`port` and over gRPC on host:`grpc_port` (None: no gRPC; 0 = any
    free port) and watches for new versions; returns the `ModelServer` (`.grpc.port` the bound
    gRPC port). At most `max_concurrent_model_calls` graph calls run at once (None: no limit),
    the others wait their turn. Version labels of the config must name AVAILABLE versions
    unless `allow_version_labels_for_unavailable_models`. A model that cannot be served raises
    a `StartupError` naming the flag, model and versions. gRPC also listens on the Unix socket
    `grpc_socket_path`, with TF Serving's `grpc_channel_arguments` ("key=value,...") and, given
    `ssl_config_file` (a text-format SSLConfig), over TLS. `prefer_tflite_model` serves a
    version's `model.tflite` instead of its saved_model.pb (TF Serving's flag). Flags that
    cannot work (equal ports, a bad SSL config) are refused before any model loads."""
    if grpc_port is not None and grpc_port != 0 and grpc_port == port:
        raise StartupError(f"--port={grpc_port} and --rest_api_port={port}: the gRPC and REST "
                           f"APIs need different ports")
    channel_arguments = grpc_listen.channel_arguments(grpc_channel_arguments)
    credentials = grpc_listen.server_credentials(ssl_config_file) if ssl_config_file else None
    GRAPH_CALLS.set_limit(max_concurrent_model_calls)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECS)  # the process is a server from here on
    loader = version_loader(enable_model_warmup, batching_parameters, prefer_tflite_model)

    def make_versions(name, base_path, policy=None, labels=None, retry_first_load=True):
        return versions_lib.ServedVersions(
            base_path, name, max_batch_size, num_versions, policy=policy, labels=labels,
            max_num_load_retries=max_num_load_retries,
            retry_interval_secs=load_retry_interval_secs, loader=loader,
            retry_first_load=retry_first_load)

    metrics = metrics_lib.RequestMetrics()
    if model_config_file is None:
        try:
            lifecycle = make_versions(model_name, export_dir)
        except ServingError as error:
            raise StartupError(f"--model_base_path={export_dir}: {error}") from error
        lifecycle.start_polling(poll_secs)
        models = {model_name: lifecycle}
        app = rest_app.RestApp(lifecycle, metrics, max_body_bytes, request_timeout_secs)
    else:
        try:
            lifecycle = model_config.ConfiguredModels(
                model_config_file, make_versions, poll_secs,
                allow_version_labels_for_unavailable_models)
        except ServingError as error:
            raise StartupError(f"--model_config_file={model_config_file}: {error}") from error
        lifecycle.start_polling(config_poll_secs)
        models = lifecycle.models
        app = ModelRouter(lifecycle, lambda versions: rest_app.RestApp(
            versions, metrics, max_body_bytes, request_timeout_secs))
    grpc = None
    try:
        if grpc_port is not None or grpc_socket_path is not None:
            configured = lifecycle if model_config_file is not None else None
            grpc = grpc_server.GrpcServer(models, host, grpc_port, metrics, configured,
                                          channel_arguments=channel_arguments,
                                          socket_path=grpc_socket_path, credentials=credentials)
        rest = RestServer(app, host, port, request_timeout_secs, max_connections,
                          header_timeout_secs)
        return ModelServer(lifecycle, rest, grpc)
    except Exception:  # nothing keeps running behind a server that did not start
        lifecycle.stop_polling()
        if grpc is not None:
            grpc.stop(0).wait()
        raise


def model_server_command(export_dir, model_name, rest_port, grpc_port=None, extra_flags=()):
    """The `tensorflow_model_server` command line, or None when that binary is not installed."""
    binary = shutil.which("tensorflow_model_server")
    if binary is None:
        return None
    command = [binary, f"--rest_api_port={rest_port}"]
    if export_dir is not None:  # else a --model_config_file among extra_flags
        command += [f"--model_name={model_name}", f"--model_base_path={os.path.abspath(export_dir)}"]
    if grpc_port is not None:
        command.append(f"--port={grpc_port}")
    return command + list(extra_flags)


def run_model_server(command):
    return subprocess.run(command, check=True)
