"""The built-in server against TF Serving's REST API document: its request/response examples and
rules (tests/fixtures/tf_serving_rest_api.json), several versions with hot reload, metrics."""

import json
import os
import re
import shutil
import time
import urllib.error
import urllib.request

import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.export import signature_methods
from tests.conftest import REPO_ROOT
from tests.serving_toy_model import HalfPlus

FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures", "tf_serving_rest_api.json")


class _HalfPlusThree(HalfPlus):
    """TF Serving's documented example model, y = 0.5 x + 3, with the signature kinds it has."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def classify(self, inputs):
        y = self._y(self._x_of(inputs))
        return {"scores": y[:, tf.newaxis], "classes": tf.fill([tf.shape(y)[0], 1], "half")}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="tag"),
                                  tf.TensorSpec([None, 5], tf.int32, name="signal")])
    def tagged(self, tag, signal):
        return {"tag_bytes": tag, "total": tf.reduce_sum(signal, axis=1)}


def _write_version(base, version, offset=3.0):
    model = _HalfPlusThree(offset)
    path = os.path.join(base, str(version))
    temp = os.path.join(base, f".tmp-{version}")
    tf.saved_model.save(model, temp, signatures={
        "serving_default": model.predict, "tensorflow/serving/regress": model.regress,
        "classify_x_to_y": model.classify, "tagged": model.tagged})
    signature_methods.set_method_names(temp, {
        "tensorflow/serving/regress": signature_methods.REGRESS,
        "classify_x_to_y": signature_methods.CLASSIFY})
    os.rename(temp, path)  # as our exports and TF Serving expect: a version appears complete
    return path


def _http(port, method, path, body=None, timeout=60):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else body.encode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _is_subset(expected, actual):
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _is_subset(value, actual[key]) for key, value in expected.items())
    return expected == actual


@pytest.fixture(scope="module")
def half_plus_three(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus_three"))
    _write_version(base, 123)
    return base


def test_documented_requests_get_the_documented_answers(half_plus_three):
    with open(FIXTURES, encoding="utf-8") as reader:
        fixtures = json.load(reader)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=half_plus_three, model_name=fixtures["model_name"], rest_api_port=0))
    port = server.server_address[1]
    try:
        for case in fixtures["cases"]:
            status, text = _http(port, case["method"], case["path"], case.get("body"))
            body = json.loads(text)  # NaN / Infinity tokens allowed, as the document says
            assert status == case["status"], (case["name"], status, body)
            if "response" in case:
                assert body == case["response"], (case["name"], body)
            if "response_subset" in case:
                assert _is_subset(case["response_subset"], body), (case["name"], body)
            if "error" in case:
                assert set(body) == {"error"} and re.search(case["error"], body["error"]), (
                    case["name"], body)
    finally:
        server.shutdown()


def _wait_for(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def _states(port):
    """{version: state} of the status call."""
    status, text = _http(port, "GET", "/v1/models/m")
    return {entry["version"]: entry["state"] for entry in json.loads(text)["model_version_status"]}


def _versions(port):
    """The AVAILABLE versions, highest first (unloaded ones stay listed as END)."""
    return sorted((version for version, state in _states(port).items() if state == "AVAILABLE"),
                  key=int, reverse=True)


def _predict(port, path="/v1/models/m:predict"):
    return _http(port, "POST", path, '{"instances": [2.0]}')


def test_new_versions_are_served_without_a_restart_and_old_ones_unloaded(tmp_path):
    base = str(tmp_path)
    _write_version(base, 1, offset=3.0)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="m", rest_api_port=0, num_versions=2,
        file_system_poll_wait_seconds=0.1, max_num_load_retries=0))
    port = server.server_address[1]
    try:
        assert _versions(port) == ["1"]
        assert json.loads(_predict(port)[1]) == {"predictions": [4.0]}
        _write_version(base, 2, offset=10.0)
        _wait_for(lambda: _versions(port) == ["2", "1"])
        assert json.loads(_predict(port)[1]) == {"predictions": [11.0]}  # the latest
        assert json.loads(_predict(port, "/v1/models/m/versions/1:predict")[1]) == {
            "predictions": [4.0]}
        _write_version(base, 3, offset=20.0)  # only the newest two stay loaded
        _wait_for(lambda: _versions(port) == ["3", "2"])
        status, text = _predict(port, "/v1/models/m/versions/1:predict")
        assert status == 404 and "Specific(m, 1)" in json.loads(text)["error"]
        assert _states(port)["1"] == "END"  # unloaded, still listed (TF Serving's monitor)
        shutil.rmtree(os.path.join(base, "3"))  # a removed version goes
        _wait_for(lambda: _versions(port) == ["2", "1"])
        assert json.loads(_predict(port)[1]) == {"predictions": [11.0]}
        os.makedirs(os.path.join(base, "4"))  # a broken version: reported, the others stay up
        with open(os.path.join(base, "4", "saved_model.pb"), "wb") as writer:
            writer.write(b"not a SavedModel")
        _wait_for(lambda: _states(port).get("4") == "END")
        statuses = json.loads(_http(port, "GET", "/v1/models/m")[1])["model_version_status"]
        broken = next(entry for entry in statuses if entry["version"] == "4")
        assert broken["state"] == "END" and broken["status"]["error_message"]
        assert json.loads(_predict(port)[1]) == {"predictions": [11.0]}
    finally:
        server.shutdown()


def test_prometheus_metrics_count_requests_by_status(half_plus_three):
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=half_plus_three, model_name="half_plus_three", rest_api_port=0))
    port = server.server_address[1]
    try:
        for _ in range(3):
            assert _http(port, "POST", "/v1/models/half_plus_three:predict",
                         '{"instances": [1.0]}')[0] == 200
        assert _http(port, "POST", "/v1/models/half_plus_three:predict", "{bad")[0] == 400
        status, text = _http(port, "GET", "/monitoring/prometheus/metrics")
        assert status == 200
        lines = text.splitlines()
        assert ':tensorflow:serving:request_count{model_name="half_plus_three",status="OK"} 3' in lines
        # The canonical status name, as TF Serving labels it (servables/tensorflow/util.cc:121).
        assert (':tensorflow:serving:request_count{model_name="half_plus_three",'
                'status="INVALID_ARGUMENT"} 1') in lines
        count = next(line for line in lines if line.startswith(
            ':tensorflow:serving:request_latency_count{model_name="half_plus_three",API="predict"'))
        assert count.endswith(" 4")
        buckets = [int(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(
            ':tensorflow:serving:request_latency_bucket{model_name="half_plus_three",API="predict"')]
        assert buckets == sorted(buckets) and buckets[-1] == 4  # cumulative, +Inf holds all
    finally:
        server.shutdown()


def test_a_stalled_upload_is_answered_408_and_frees_the_server(half_plus_three):
    import socket
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=half_plus_three, model_name="half_plus_three", rest_api_port=0,
        request_timeout_secs=1.0))
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as stalled:
            stalled.sendall(b"POST /v1/models/half_plus_three:predict HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 100\r\n\r\n{\"instances\": [")
            started = time.monotonic()
            assert _predict_ok(port)  # others are answered meanwhile
            answer = b""
            while chunk := stalled.recv(65536):
                answer += chunk
                if b"}" in chunk:
                    break
            assert time.monotonic() - started < 15
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.split()[1] == b"408" and "request_timeout_secs" in json.loads(body)["error"]
        assert _predict_ok(port)
    finally:
        server.shutdown()


def _predict_ok(port):
    status, text = _http(port, "POST", "/v1/models/half_plus_three:predict", '{"instances": [1.0]}')
    return status == 200 and json.loads(text) == {"predictions": [3.5]}


def test_unparseable_http_gets_a_json_400(half_plus_three):
    import socket
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=half_plus_three, model_name="half_plus_three", rest_api_port=0))
    port = server.server_address[1]
    try:
        for garbage in (b"NOT HTTP AT ALL\r\n\r\n", b"GET /v1/models/x HTTP/1.1\r\nBad Header\r\n\r\n",
                        b"\x00\x01\x02\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
                connection.sendall(garbage)
                answer = b""
                while chunk := connection.recv(65536):
                    answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.split()[1] == b"400", answer[:200]
            assert "Malformed HTTP request" in json.loads(body)["error"]
        assert _predict_ok(port)
    finally:
        server.shutdown()
