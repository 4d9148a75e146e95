"""The built-in TF Serving REST API against a small SavedModel with string and int signatures."""

import json
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
    server, _ = serving.start_python_server(export_dir, "toy", port=0)
    base = f"http://127.0.0.1:{server.server_address[1]}/v1/models/toy"
    try:
        status, body = _call(base)
        assert status == 200 and body["model_version_status"][0]["state"] == "AVAILABLE"
        assert body["model_version_status"][0]["version"] == "1700000000"
        status, body = _call(base + "/metadata")
        assert set(body["metadata"]["signature_def"]["signature_def"]) == {"text", "serving_default"}

        status, body = _call(base + ":predict", {"signature_name": "text", "instances": [
            {"text_a": "a", "text_b": "b"}, {"text_a": "a much longer sentence", "text_b": ""}]})
        assert status == 200
        first, second = body["predictions"]
        assert first["label"] == "short" and first["predictions"] == 0
        assert second["label"] == "long" and second["predictions"] == 1
        np.testing.assert_allclose(sum(second["probabilities"]), 1.0, rtol=1e-6)

        status, body = _call(base + ":predict", {"inputs": {"input_ids": [[1, 2, 3], [4, 5, 6]]}})
        assert status == 200 and body == {"outputs": {"total": [6, 15]}}
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
