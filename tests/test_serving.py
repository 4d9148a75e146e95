"""The built-in TF Serving REST API against a small SavedModel with string and int signatures."""

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from tests.conftest import REPO_ROOT


class _Toy(tf.Module):
    """Scores text by length: enough to check that values travel through the REST layer."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    def text(self, text_a, text_b):
        length = tf.cast(tf.strings.length(text_a) + tf.strings.length(text_b), tf.float32)
        probability = tf.sigmoid(length - 10.0)
        predictions = tf.cast(probability > 0.5, tf.int32)
        return {"probabilities": tf.stack([1 - probability, probability], axis=1),
                "predictions": predictions,
                "label": tf.gather(tf.constant(["short", "long"]), predictions)}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.int32)])
    def ids(self, input_ids):
        return {"total": tf.reduce_sum(input_ids, axis=1)}


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    toy = _Toy()
    tf.saved_model.save(toy, str(base / "1700000000"),
                        signatures={"text": toy.text, "serving_default": toy.ids})
    return str(base)


def _call(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_rest_api_matches_tf_serving_formats(export_dir):
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=export_dir, model_name="toy", rest_api_port=0))
    base = f"http://127.0.0.1:{server.server_address[1]}/v1/models/toy"
    try:
        status, body = _call(base)
        assert status == 200 and body["model_version_status"][0]["state"] == "AVAILABLE"
        assert body["model_version_status"][0]["version"] == "1700000000"
        status, body = _call(base + "/metadata")
        # Every SignatureDef of the MetaGraphDef, as TF Serving lists them (its TF2 metadata
        # testdata, saved_model_half_plus_two_tf2_2_versions_metadata.json, has the init op).
        assert set(body["metadata"]["signature_def"]["signature_def"]) == {
            "text", "serving_default", "__saved_model_init_op"}

        status, body = _call(base + ":predict", {"signature_name": "text", "instances": [
            {"text_a": "a", "text_b": "b"}, {"text_a": "a much longer sentence", "text_b": ""}]})
        assert status == 200
        first, second = body["predictions"]
        assert first["label"] == "short" and first["predictions"] == 0
        assert second["label"] == "long" and second["predictions"] == 1
        np.testing.assert_allclose(sum(second["probabilities"]), 1.0, rtol=1e-6)

        status, body = _call(base + ":predict", {"inputs": {"input_ids": [[1, 2, 3], [4, 5, 6]]}})
        # One output: TF Serving omits its name in the columnar answer too (api_rest.md).
        assert status == 200 and body == {"outputs": [6, 15]}
        status, body = _call(base + ":predict", {"instances": [[1, 1, 1]]})
        assert body == {"predictions": [3]}

        status, body = _call(base + ":predict", {"signature_name": "nope", "instances": [[1, 2, 3]]})
        assert status == 400 and "nope" in body["error"]
        status, body = _call(base + ":predict", {"signature_name": "text", "instances": [{"text_a": "x"}]})
        assert status == 400 and "text_b" in body["error"]
    finally:
        server.shutdown()


def test_missing_export_dir_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such"):
        serving.resolve_model_dir(str(tmp_path / "no_such"))
    with pytest.raises(FileNotFoundError, match="numeric version"):
        serving.resolve_model_dir(str(tmp_path))


@pytest.mark.slow
def test_serve_script_classifies_once_in_a_fresh_process(export_dir):
    result = subprocess.run(
        [sys.executable, "serve.py", f"--export_dir={export_dir}", "--text=tiny", "--text=a much longer one"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["label"] for line in lines] == ["short", "long"]


def _raw(port, request_bytes, timeout=30):
    """Sends raw bytes; returns (status, JSON body) of the answer (None if no answer)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request_bytes)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    if not data:
        return None, None
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _post(path, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data


@pytest.fixture(scope="module")
def glue_export(tmp_path_factory, spm_model_file):
    """A real GLUE classifier export (tiny, random weights) with the in-graph tokenizer."""
    from albert_tf.export import classifier as classifier_export
    from tests.serving_fixtures import tiny_classifier_signatures
    return classifier_export.write_saved_model(tiny_classifier_signatures(spm_model_file),
                                               str(tmp_path_factory.mktemp("glue")))


@pytest.mark.slow
def test_every_bad_request_gets_a_json_answer_and_the_server_stays_up(glue_export):
    """The requests that used to kill the process or drop the connection, and TF Serving's
    codes for the rest: 400 malformed or an unknown label, 404 unknown path/model/version, 413
    too large."""
    export_base = os.path.dirname(glue_export)
    version = os.path.basename(glue_export)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=export_base, model_name="albert", rest_api_port=0, max_batch_size=64,
        max_body_bytes=1 << 16))
    port = server.server_address[1]
    base = "/v1/models/albert"
    ids = {"input_ids": [[2, 10, 3]], "input_mask": [[1, 1, 1]], "segment_ids": [[0, 0, 0]]}
    cases = [
        # batch sizes that disagree: used to SIGSEGV inside the tokenizer's trimmer
        (_post(base + ":predict", {"signature_name": "text", "inputs": {
            "text_a": ["a good film", "bad"], "text_b": [""]}}), 400, "same batch size"),
        (_post(base + ":predict", {"signature_name": "text", "instances": [
            {"text_a": ["a", "b"], "text_b": ""}]}), 400, "rank"),
        (_post(base + ":predict", {"signature_name": "ids", "inputs": dict(
            ids, input_mask=[[1, 1]])}), 400, "input_mask|same batch|shape"),
        (_post(base + ":predict", {"signature_name": "ids", "inputs": dict(
            ids, input_ids=[[2, 10], [3]])}), 400, "input_ids"),
        (_post(base + ":predict", {"signature_name": "ids", "inputs": dict(
            ids, input_ids=[["x", "y", "z"]])}), 400, "input_ids"),
        (_post(base + ":predict", {"inputs": {"serialized_example": [{"b64": "bm90IGFuIGV4YW1wbGU="}]}}),
         400, "."),  # valid base64 of a garbage tf.Example: the parse kernel's error
        (_post(base + ":predict", {"inputs": {"serialized_example": [{"b64": "***"}]}}), 400,
         "base64"),
        (_post(base + ":predict", {"instances": [{"serialized_example": "x"}],
                                   "inputs": {"serialized_example": ["x"]}}), 400, "not both"),
        (_post(base + ":predict", b"{not json"), 400, "JSON"),
        (_post(base + ":predict", [1, 2]), 400, "JSON object"),
        (_post(base + ":predict", {"signature_name": "text", "inputs": {
            "text_a": ["x"] * 65, "text_b": [""] * 65}}), 400, "max_batch_size"),
        (_post(base + ":predict", {"inputs": {"serialized_example": ["x" * 70000]}}), 413,
         "max_body_bytes"),
        (_post(base + "/versions/1:predict", {"instances": []}), 404, "Specific"),
        # TF Serving: an unknown label is INVALID_ARGUMENT (http_rest_api_handler_test.cc:317)
        (_post(base + "/labels/stable:predict", {"instances": []}), 400, "label"),
        (_post("/v1/models/other:predict", {"instances": []}), 404, "other"),
        (_post("/v2/nothing", {}), 404, "Malformed"),
        # TF Serving: any other method is a malformed request (http_rest_api_handler.cc:74)
        (b"DELETE " + base.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400,
         "Malformed request: DELETE"),
    ]
    try:
        for request, status, message in cases:
            code, body = _raw(port, request)
            assert code == status, (request[:200], code, body)
            if message is not None:
                assert re.search(message, body["error"]), (request[:200], body)
        # Still up, and right: a good request to the version that exists.
        code, body = _raw(port, _post(f"{base}/versions/{version}:predict", {
            "signature_name": "text", "instances": [{"text_a": "a fine film", "text_b": ""}]}))
        assert code == 200 and body["predictions"][0]["label"] in ("neg", "pos")
        code, body = _raw(port, f"GET {base}/metadata HTTP/1.1\r\nHost: x\r\n"
                                "Connection: close\r\n\r\n".encode())
        text = body["metadata"]["signature_def"]["signature_def"]["text"]
        assert text["method_name"] == "tensorflow/serving/predict"
        assert text["inputs"]["text_a"]["dtype"] == "DT_STRING"
        assert text["inputs"]["text_a"]["tensor_shape"]["dim"] == [{"size": "-1", "name": ""}]
        assert text["outputs"]["probabilities"]["dtype"] == "DT_FLOAT"
    finally:
        server.shutdown()


@pytest.mark.slow
def test_fuzzed_bodies_and_concurrent_clients(glue_export):
    """Hundreds of random malformed bodies, then 32 concurrent clients: every request answered
    (no reset), every error a JSON body, and the server correct afterwards."""
    import concurrent.futures
    import random
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=os.path.dirname(glue_export), model_name="albert", rest_api_port=0,
        max_batch_size=64))
    port = server.server_address[1]
    rng = random.Random(0)
    pieces = [None, 1, -1, 2 ** 70, 1.5, "x", "", [], {}, [[1, 2], [3]], [[1, 2, 3]], {"b64": "!"},
              ["a"] * 3, [[2, 5, 3]] * 2, {"text_a": "a"}, True]
    keys = ["instances", "inputs", "signature_name", "text_a", "text_b", "input_ids",
            "input_mask", "segment_ids", "serialized_example"]

    def random_body():
        choice = rng.random()
        if choice < 0.15:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        body = {rng.choice(keys): rng.choice(pieces) for _ in range(rng.randrange(1, 4))}
        if rng.random() < 0.5:
            body["inputs"] = {rng.choice(keys): rng.choice(pieces) for _ in range(3)}
        if rng.random() < 0.3:
            body["signature_name"] = rng.choice(["text", "ids", "serving_default", "nope"])
        return body

    try:
        for _ in range(300):
            path = rng.choice(["/v1/models/albert:predict", "/v1/models/albert:predict",
                               "/v1/models/albert/versions/7:predict", "/v1/models/albert:classify",
                               "/v1/models/x:predict", "/v1/models/albert/metadata"])
            code, body = _raw(port, _post(path, random_body()))
            assert code is not None and 400 <= code < 600, (path, code)
            assert isinstance(body.get("error"), str)
        good = _post("/v1/models/albert:predict", {"signature_name": "text", "instances": [
            {"text_a": "a fine film", "text_b": ""}, {"text_a": "dull", "text_b": ""}]})
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            # Generous client timeout: 32 graph runs share 2 cores on CI; an unanswered request
            # still fails the test (code None).
            answers = list(pool.map(lambda _: _raw(port, good, timeout=300), range(32 * 4)))
        assert all(code == 200 and len(body["predictions"]) == 2 for code, body in answers)
        assert len({json.dumps(body) for _, body in answers}) == 1  # the same answer every time
    finally:
        server.shutdown()


def test_serve_text_answers_from_the_version_the_server_core_serves(export_dir, tmp_path, capsys):
    """--text goes through the server core: a newest version that cannot load is passed over
    as the server passes it over (END), and the version it serves answers."""
    from absl import flags
    from albert_tf.scripts import serve
    base = tmp_path / "base"
    shutil.copytree(os.path.join(export_dir, "1700000000"), base / "1")
    os.makedirs(base / "2")
    (base / "2" / "saved_model.pb").write_bytes(b"")
    flag_values = flags.FlagValues()
    serve.define_flags(flag_values)
    flag_values(["serve.py", f"--model_base_path={base}", "--text=tiny",
                 "--text=a much longer one"])
    serve.classify_once(flag_values)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["label"] for line in lines] == ["short", "long"]
