"""Graceful shutdown of the built-in server (serve.py in a real process, real signals): on
SIGTERM (every rolling update of a deployment sends it) and SIGINT new connections and calls
are refused at once, the REST and gRPC requests in flight are answered, and the process exits
0; a request still running at the end of --shutdown_grace_period_secs is answered 503 /
UNAVAILABLE, never left on a dropped connection. A slow model call is a lone request waiting
out the batch timeout (--batching_parameters_file), so no model needs to be slow."""

import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from tests.conftest import REPO_ROOT, script_env
from tests.serving_toy_model import write_version

_LISTENING = re.compile(r"on http://[^:]+:(\d+) \(REST\) and gRPC port (\d+)")


@pytest.fixture(scope="module")
def model_base(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus"))
    write_version(base, 1)
    return base


class Server:
    """serve.py started on any free ports, its requests taking `batch_secs` (the batch
    timeout) each."""

    def __init__(self, base, folder, batch_secs, grace_secs):
        parameters = folder / "batching.txt"
        parameters.write_text(f"max_batch_size {{ value: 64 }}\n"
                              f"batch_timeout_micros {{ value: {int(batch_secs * 1e6)} }}\n")
        self.log_path = folder / "server.log"
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "serve.py", f"--model_base_path={base}", "--model_name=half",
                 "--rest_api_port=0", "--port=0", "--nouse_model_server",
                 f"--batching_parameters_file={parameters}",
                 f"--shutdown_grace_period_secs={grace_secs}"],
                cwd=REPO_ROOT, env=script_env(), stdout=log, stderr=subprocess.STDOUT)

    def wait_listening(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = _LISTENING.search(self.log_path.read_text())
            if found:
                self.rest_port, self.grpc_port = map(int, found.groups())
                return
            assert self.process.poll() is None, self.log_path.read_text()[-3000:]
            time.sleep(0.1)
        raise AssertionError(f"serve.py did not start: {self.log_path.read_text()[-3000:]}")

    def send_both(self):
        """A REST and a gRPC Predict of x = 1 on threads; their answers land in `results`."""
        self.results = {}

        def rest():
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.rest_port}/v1/models/half:predict",
                data=json.dumps({"instances": [1.0]}).encode())
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    self.results["rest"] = (response.status, json.loads(response.read()))
            except urllib.error.HTTPError as error:
                self.results["rest"] = (error.code, json.loads(error.read()))

        def grpc_call():
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "half"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0], dtype=tf.float32))
            with grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}") as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                try:
                    response = stub.Predict(request, timeout=60)
                    self.results["grpc"] = tf.make_ndarray(response.outputs["y"]).tolist()
                except grpc.RpcError as error:
                    self.results["grpc"] = (error.code(), error.details())
        self.threads = [threading.Thread(target=rest), threading.Thread(target=grpc_call)]
        for thread in self.threads:
            thread.start()

    def answers(self):
        for thread in self.threads:
            thread.join(60)
        return self.results

    def exit_status(self):
        try:
            return self.process.wait(60)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def _refuses_new_requests(server):
    """After the signal: REST refuses the connection, gRPC answers UNAVAILABLE at once."""
    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{server.rest_port}/v1/models/half", timeout=10)
    assert isinstance(refused.value.reason, ConnectionRefusedError)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        with pytest.raises(grpc.RpcError) as error:
            prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=10)
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.slow
def test_requests_in_flight_across_sigterm_and_sigint_are_answered_then_exit_0(model_base,
                                                                                tmp_path):
    servers = {}
    for signum in (signal.SIGTERM, signal.SIGINT):  # started together: start-up dominates
        folder = tmp_path / signum.name
        folder.mkdir()
        servers[signum] = Server(model_base, folder, batch_secs=3.0, grace_secs=20)
    try:
        for signum, server in servers.items():
            server.wait_listening()
            server.send_both()
            time.sleep(1.0)  # both requests are waiting out their batch's 3 s
            sent = time.monotonic()
            server.process.send_signal(signum)
            time.sleep(0.5)
            _refuses_new_requests(server)
            assert server.answers() == {"rest": (200, {"predictions": [3.5]}), "grpc": [3.5]}, \
                signum.name
            assert server.exit_status() == 0, server.log_path.read_text()[-3000:]
            assert time.monotonic() - sent < 15  # the exit did not wait out the grace period
            assert f"{signum.name}: no new connections or calls" in server.log_path.read_text()
    finally:
        for server in servers.values():
            if server.process.poll() is None:
                server.process.kill()


@pytest.mark.slow
def test_requests_past_the_grace_period_get_503_and_unavailable(model_base, tmp_path):
    server = Server(model_base, tmp_path, batch_secs=30.0, grace_secs=0.5)
    try:
        server.wait_listening()
        server.send_both()
        time.sleep(1.0)
        sent = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        answers = server.answers()
        answered_after = time.monotonic() - sent
        assert answers["rest"] == (503, {"error": "the server is shutting down: the request did "
                                                  "not finish within "
                                                  "--shutdown_grace_period_secs=0.5"})
        assert answers["grpc"][0] == grpc.StatusCode.UNAVAILABLE
        assert 0.5 <= answered_after < 10, answered_after  # at the deadline, not at the batch's
        assert server.exit_status() == 0, server.log_path.read_text()[-3000:]
    finally:
        if server.process.poll() is None:
            server.process.kill()
