"""TF Serving's --model_config_file on the built-in server: several models, version policies
and labels (text-format ModelServerConfig), reread without a restart."""

import json
import os
import re
import time
import urllib.error
import urllib.request

from google.protobuf import text_format
import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (model_management_pb2, model_service_pb2_grpc, predict_pb2,
                                     prediction_service_pb2_grpc)

from albert_tf import serving
from albert_tf.serving import model_config
from tests.serving_toy_model import write_version

CONFIG = """
model_config_list {
  config { name: "a" base_path: "%(a)s" model_platform: "tensorflow" }
  config {
    name: "b" base_path: "%(b)s"
    model_version_policy { specific { versions: 1 versions: 2 } }
    version_labels { key: "stable" value: 1 }
    version_labels { key: "canary" value: 2 }
  }
}
"""


def _get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _predict_status(port, path):
    """The HTTP status of a predict call: 404 once the model is no longer served."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}:predict",
                                     data=json.dumps({"instances": [1.0]}).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _predict(port, path, x=2.0):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}:predict",
                                     data=json.dumps({"instances": [x]}).encode())
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["predictions"]


def test_several_models_policies_labels_and_reload(tmp_path):
    bases = {"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}
    for version in (1, 2):
        write_version(bases["a"], version, offset=float(version))
    for version in (1, 2, 3):
        write_version(bases["b"], version, offset=10.0 * version)
    config = tmp_path / "models.config"
    config.write_text(CONFIG % bases)
    # Labels at start-up name versions not loaded yet (server_core.cc UpdateModelVersionLabelMap).
    server = serving.start_python_server(serving.ServerOptions(
        rest_api_port=0, grpc_port=0, file_system_poll_wait_seconds=0.1,
        model_config_file=str(config), model_config_file_poll_wait_seconds=0.1,
        allow_version_labels_for_unavailable_models=True))
    port = server.server_address[1]
    try:
        versions = lambda name: [e["version"] for e in _get(port, f"/v1/models/{name}")[1][  # noqa: E731
            "model_version_status"]]
        assert versions("a") == ["2"]  # TF Serving's default policy: latest 1
        assert versions("b") == ["2", "1"]  # specific 1, 2; version 3 not served
        assert _predict(port, "/v1/models/a") == [3.0]  # 0.5 * 2 + 2
        assert _predict(port, "/v1/models/b") == [21.0]
        assert _predict(port, "/v1/models/b/versions/1") == [11.0]
        assert _get(port, "/v1/models/c")[0] == 404
        assert _predict(port, "/v1/models/b/labels/stable") == [11.0]
        assert _predict(port, "/v1/models/b/labels/canary") == [21.0]
        status, body = _get(port, "/v1/models/b/labels/canary")
        assert status == 200 and body["model_version_status"][0]["version"] == "2"
        # A status call ignores the label and lists every version (get_model_status_impl.cc).
        status, body = _get(port, "/v1/models/b/labels/beta")
        assert status == 200 and [e["version"] for e in body["model_version_status"]] == ["2", "1"]
        assert _predict_status(port, "/v1/models/b/labels/beta") == 400

        stub = prediction_service_pb2_grpc.PredictionServiceStub(
            grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}"))
        request = predict_pb2.PredictRequest()
        request.model_spec.name, request.model_spec.version_label = "b", "stable"
        request.inputs["x"].CopyFrom(tf.make_tensor_proto([2.0], dtype=tf.float32))
        response = stub.Predict(request, timeout=30)
        assert response.model_spec.version.value == 1
        assert tf.make_ndarray(response.outputs["y"]).tolist() == [11.0]

        # Reread: model a removed, b's labels moved.
        config.write_text((CONFIG % bases).replace(
            'config { name: "a" base_path: "%s" model_platform: "tensorflow" }' % bases["a"], "")
            .replace('key: "stable" value: 1', 'key: "stable" value: 2'))
        deadline = time.monotonic() + 30
        while _predict_status(port, "/v1/models/a") != 404:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # Its version stays listed, END (server_core_test.cc ReloadConfigUnloadsModels).
        assert [(e["version"], e["state"]) for e in _get(port, "/v1/models/a")[1][
            "model_version_status"]] == [("2", "END")]
        assert stub.Predict(request, timeout=30).model_spec.version.value == 2
    finally:
        server.shutdown()


@pytest.mark.parametrize("text, message", [
    ("model_config_list { config { name: 'a' } }",
     "Expected model a to have an absolute path or URI; got base_path()="),
    ("model_config_list { config { base_path: '/x' } }", "every config needs a name"),
    ("model_config_list { config { name: 'a' base_path: '/x' } config { name: 'a' base_path: '/y' } }",
     "Illegal to list model a multiple times in config list"),
    ("model_config_list { config { name: 'a' base_path: '/x' model_platform: 'pytorch' } }",
     "only 'tensorflow'"),
    # tensorflow_model_server_test.py testBadModelConfig
    ("model_config_list { nonsense: 1 }",
     "Error parsing text-format tensorflow.serving.ModelServerConfig"),
])
def test_bad_config_files_are_refused_naming_file_and_model(tmp_path, text, message):
    path = tmp_path / "models.config"
    path.write_text(text)
    with pytest.raises(model_config.ModelConfigError, match=re.escape(message)) as error:
        model_config.parse(str(path))
    assert str(path) in str(error.value)


def test_handle_reload_config_request_serves_the_sent_config_until_the_file_changes(tmp_path):
    """gRPC ModelService.HandleReloadConfigRequest (model_service.proto): the server serves the
    models of the ModelServerConfig it is sent; a config TF Serving would refuse is refused
    with INVALID_ARGUMENT and changes nothing."""
    bases = {"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}
    write_version(bases["a"], 1, offset=1.0)
    write_version(bases["b"], 1, offset=10.0)
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "a" base_path: "%(a)s" } }' % bases)
    server = serving.start_python_server(serving.ServerOptions(
        rest_api_port=0, grpc_port=0, file_system_poll_wait_seconds=0.1,
        model_config_file=str(config), model_config_file_poll_wait_seconds=0.1))
    port = server.server_address[1]
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    try:
        request = model_management_pb2.ReloadConfigRequest()
        text_format.Parse('model_config_list { config { name: "b" base_path: "%(b)s" } }' % bases,
                          request.config)
        response = stub.HandleReloadConfigRequest(request, timeout=60)
        assert response.status.error_code == 0
        assert _predict(port, "/v1/models/b") == [11.0]  # 0.5 * 2 + 10
        assert _predict_status(port, "/v1/models/a") == 404
        time.sleep(0.5)  # several polls of the unchanged file: the sent config stays
        assert _predict(port, "/v1/models/b") == [11.0]

        bad = model_management_pb2.ReloadConfigRequest()
        text_format.Parse('model_config_list { config { name: "c" } }', bad.config)
        with pytest.raises(grpc.RpcError) as error:
            stub.HandleReloadConfigRequest(bad, timeout=30)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error.value.details() == ("HandleReloadConfigRequest: Expected model c to have an "
                                         "absolute path or URI; got base_path()=")
        assert _predict(port, "/v1/models/b") == [11.0]

        config.write_text('model_config_list { config { name: "a" base_path: "%(a)s" '
                          'model_platform: "tensorflow" } }' % bases)  # the file changes
        deadline = time.monotonic() + 30
        while _predict_status(port, "/v1/models/b") != 404:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert _predict(port, "/v1/models/a") == [2.0]
    finally:
        channel.close()
        server.shutdown()


def test_refused_reload_logged_once_per_change_and_no_versions_warned(tmp_path, caplog):
    """A config file that stops parsing is one warning line per different refusal (not a
    traceback every poll); a base path emptied of versions is warned about as TF Serving does
    ("No versions of servable ... found under base path"), its loaded version still served."""
    base = str(tmp_path / "a")
    write_version(base, 1, offset=1.0)
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "a" base_path: "%s" } }' % base)
    server = serving.start_python_server(serving.ServerOptions(
        rest_api_port=0, file_system_poll_wait_seconds=0.1,
        model_config_file=str(config), model_config_file_poll_wait_seconds=0.1))
    port = server.server_address[1]
    caplog.set_level("WARNING")

    def refusals():
        return [r for r in caplog.records if "config reload refused" in r.getMessage()]

    def replace_config(text):  # whole at once: write_text truncates first, and a poll reading
        config.with_suffix(".tmp").write_text(text)  # the empty file logs a refusal of its own
        os.replace(config.with_suffix(".tmp"), config)
    try:
        replace_config("model_config_list { not a config")
        time.sleep(1.0)  # about ten polls
        assert len(refusals()) == 1 and refusals()[0].exc_info is None
        assert str(config) in refusals()[0].getMessage()
        assert "\n" not in refusals()[0].getMessage()
        replace_config("model_config_list { still not")
        time.sleep(1.0)
        assert len(refusals()) == 2
        tf.io.gfile.rmtree(base + "/1")
        time.sleep(1.0)
        warned = [r.getMessage() for r in caplog.records if "No versions" in r.getMessage()]
        assert warned == [f"No versions of servable a found under base path {base}"]
        assert _predict(port, "/v1/models/a") == [2.0]  # 0.5 * 2 + 1, from memory
    finally:
        server.shutdown()
