"""Starting a server: `tensorflow_model_server` when it is installed, else the built-in one: the
REST app on uvicorn (a maintained asyncio HTTP/1.1 server: keep-alive, a real listen backlog,
HTTP parsing errors answered by h11) and the gRPC API on grpcio, both over one server core
(`server_core`), started from one `ServerOptions`.

Shutdown (SIGTERM, as every rolling update of a deployment sends, or SIGINT) is graceful: both
front ends stop accepting connections and calls at once, the requests in flight are finished
within the grace period, and the ones still running at its end are answered, 503 on REST and
UNAVAILABLE on gRPC, never left without an answer; then the process exits 0."""

import asyncio
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Optional

from absl import logging
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from albert_tf.serving import grpc_listen
from albert_tf.serving import grpc_server
from albert_tf.serving import metrics as metrics_lib
from albert_tf.serving import rest_app
from albert_tf.serving.batching import BatchingParameters
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, GRAPH_CALLS
from albert_tf.serving.rest_app import DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT_SECS
from albert_tf.serving.server_core import ServerCore, StartupError
from albert_tf.serving.versions import (DEFAULT_LOAD_RETRY_INTERVAL_SECS,
                                        DEFAULT_MAX_NUM_LOAD_RETRIES, DEFAULT_NUM_VERSIONS,
                                        DEFAULT_POLL_SECS)

LISTEN_BACKLOG = 2048
DEFAULT_HEADER_TIMEOUT_SECS = 10.0
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_MAX_CONCURRENT_MODEL_CALLS = os.cpu_count() or 1
# Kubernetes sends SIGTERM, then SIGKILL 30 s later (terminationGracePeriodSeconds' default):
# 25 s of draining leaves the process time to answer the rest and exit before that.
DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS = 25.0
# How long a Python thread may hold the GIL while another waits for it (Python's default: 5 ms).
# A graph call needs the GIL for moments between its kernels (inputs, the call's Python,
# outputs); with dozens of request threads busy in Python, each of those moments waited up to
# 5 ms, leaving the CPU idle: one batch thread answered 0.70-0.79 of the in-process rate at its
# batch size, 0.89-0.95 with 0.5 ms (bench/bench_rest_server.py, bench/RESULTS.md).
GIL_SWITCH_INTERVAL_SECS = 0.0005


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """What the built-in server serves and how, made from serve.py's flags and named as they
    are (TF Serving's Server::Options). The models are either `model_name` from
    `model_base_path` or those of `model_config_file`; a port of 0 is any free port, a
    `grpc_port` of None no gRPC port; `max_concurrent_model_calls` None is no limit;
    `batching_parameters` None is no batching."""

    model_base_path: Optional[str] = None
    model_name: Optional[str] = "albert"
    model_config_file: Optional[str] = None
    model_config_file_poll_wait_seconds: float = 0
    allow_version_labels_for_unavailable_models: bool = False
    rest_api_port: int = 8501
    grpc_port: Optional[int] = None
    host: str = "127.0.0.1"
    grpc_socket_path: Optional[str] = None
    grpc_channel_arguments: str = ""
    ssl_config_file: Optional[str] = None
    num_versions: int = DEFAULT_NUM_VERSIONS
    file_system_poll_wait_seconds: float = DEFAULT_POLL_SECS
    max_num_load_retries: int = DEFAULT_MAX_NUM_LOAD_RETRIES
    load_retry_interval_secs: float = DEFAULT_LOAD_RETRY_INTERVAL_SECS
    enable_model_warmup: bool = True
    prefer_tflite_model: bool = False
    batching_parameters: Optional[BatchingParameters] = None
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    request_timeout_secs: float = DEFAULT_REQUEST_TIMEOUT_SECS
    header_timeout_secs: float = DEFAULT_HEADER_TIMEOUT_SECS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_concurrent_model_calls: Optional[int] = DEFAULT_MAX_CONCURRENT_MODEL_CALLS
    shutdown_grace_period_secs: float = DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS


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

    grace_secs = None  # set by RestServer.shutdown

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
    """The REST front end: uvicorn running `app` on a background thread, on the host, port and
    connection limits of `options`. `server_address` is the bound (host, port);
    `shutdown(grace_secs)` stops accepting, finishes open requests and answers 503 to those
    still running after `grace_secs`."""

    def __init__(self, app, options):
        host, port = options.host, options.rest_api_port
        protocol = type("H11Protocol", (JsonErrorH11Protocol,),
                        {"header_timeout_secs": options.header_timeout_secs})
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
                                log_level="warning",
                                limit_concurrency=options.max_connections + 1,
                                timeout_keep_alive=max(1, round(options.request_timeout_secs)),
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

    def shutdown(self, grace_secs):
        self._server.grace_secs = grace_secs
        self._server.should_exit = True
        # Answered and closed connections end the wait, not a model call still running.
        deadline = time.monotonic() + grace_secs + 5
        while self._server.server_state.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        self._thread.join(max(0.0, min(1.0, deadline - time.monotonic())))


class ModelServer:
    """The running built-in server: its `core` (the served models) and front ends, `rest` and
    `grpc` (None when off). `server_address` is REST's bound (host, port)."""

    def __init__(self, core, rest, grpc, grace_secs):
        self.core, self.rest, self.grpc, self.grace_secs = core, rest, grpc, grace_secs
        self.server_address = rest.server_address

    def serve_until_signalled(self):
        """Serves until SIGTERM or SIGINT, then shuts down and ends the process with exit
        status 0 (1 if the REST server stopped by itself). The exit does not wait for a model
        call still running past the deadline (its request was answered 503 / UNAVAILABLE):
        Python would join its thread first, and a stuck call would hold the process until
        SIGKILL."""
        received = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda number, _: received.append(signal.Signals(number).name))
        while not received and self.rest.running():
            time.sleep(0.1)
        logging.info("%s: no new connections or calls; finishing the requests in flight within "
                     "%gs", received[0] if received else "REST server stopped", self.grace_secs)
        self.shutdown()
        logging.info("shut down")
        logging.flush()
        sys.stderr.flush()
        os._exit(0 if received else 1)

    def shutdown(self):
        """Both front ends stop taking connections and calls at once; requests in flight are
        finished within the grace period, those still running then answered 503 (REST) and
        UNAVAILABLE (gRPC: grpcio cancels them with that code); then the model polling stops."""
        grpc_stopped = self.grpc.stop(self.grace_secs) if self.grpc is not None else None
        self.rest.shutdown(self.grace_secs)
        if grpc_stopped is not None:
            grpc_stopped.wait(self.grace_secs + 5)
        self.core.stop()


def start_python_server(options):
    """Serves the models of `options` (a `ServerOptions`) over REST and, with a `grpc_port` or
    `grpc_socket_path`, gRPC; returns the `ModelServer` (`.grpc.port` the bound gRPC port).
    Options that cannot work (equal ports, bad gRPC channel arguments or SSL config) are
    refused with a `StartupError` before any model loads."""
    if options.grpc_port and options.grpc_port == options.rest_api_port:
        raise StartupError(f"--port={options.grpc_port} and --rest_api_port="
                           f"{options.rest_api_port}: the gRPC and REST APIs need different ports")
    channel_arguments = grpc_listen.channel_arguments(options.grpc_channel_arguments)
    credentials = (grpc_listen.server_credentials(options.ssl_config_file)
                   if options.ssl_config_file else None)
    GRAPH_CALLS.set_limit(options.max_concurrent_model_calls)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECS)  # the process is a server from here on
    core = ServerCore(options)
    metrics = metrics_lib.RequestMetrics()
    grpc = None
    try:
        if options.grpc_port is not None or options.grpc_socket_path is not None:
            grpc = grpc_server.GrpcServer(core, options.host, options.grpc_port, metrics,
                                          channel_arguments=channel_arguments,
                                          socket_path=options.grpc_socket_path,
                                          credentials=credentials)
        app = rest_app.RestApp(core, metrics, options.max_body_bytes,
                               options.request_timeout_secs)
        return ModelServer(core, RestServer(app, options), grpc,
                           options.shutdown_grace_period_secs)
    except Exception:  # nothing keeps running behind a server that did not start
        core.stop()
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
