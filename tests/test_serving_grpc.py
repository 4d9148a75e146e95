"""TF Serving's gRPC API, driven by the stock `prediction_service_pb2_grpc.PredictionServiceStub`
and `model_service_pb2_grpc.ModelServiceStub` with `tf.make_tensor_proto` inputs, against the
built-in server; every answer is compared with the REST answer to the same request."""

import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2,
                                     get_model_status_pb2, inference_pb2, model_management_pb2,
                                     model_service_pb2_grpc, predict_pb2,
                                     prediction_service_pb2_grpc, regression_pb2)

from albert_tf import serving
from tests.serving_toy_model import write_version


def _example(x):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x]))}))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus"))
    write_version(base, 7)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="half", rest_api_port=0, grpc_port=0))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    yield (server, prediction_service_pb2_grpc.PredictionServiceStub(channel),
           model_service_pb2_grpc.ModelServiceStub(channel))
    channel.close()
    server.shutdown()


def _rest(server, path, body=None):
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/half{path}"
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as response:
        return json.loads(response.read())


def test_predict_matches_rest(server):
    rest_server, stub, _ = server
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0, 2.0, 5.0], dtype=tf.float32))
    response = stub.Predict(request, timeout=30)
    assert response.model_spec.name == "half" and response.model_spec.version.value == 7
    assert response.model_spec.signature_name == "serving_default"
    y = tf.make_ndarray(response.outputs["y"])
    np.testing.assert_allclose(y, [3.5, 4.0, 5.5])  # 0.5 x + 3
    assert _rest(rest_server, ":predict", {"instances": [1.0, 2.0, 5.0]}) == {
        "predictions": y.tolist()}

    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "ids"
    request.inputs["ids"].CopyFrom(tf.make_tensor_proto(np.array([[1, 2, 3], [4, 5, 6]], np.int32)))
    request.output_filter.append("total")
    response = stub.Predict(request, timeout=30)
    assert list(response.outputs) == ["total"]
    assert tf.make_ndarray(response.outputs["total"]).tolist() == _rest(
        rest_server, ":predict", {"signature_name": "ids", "inputs": {"ids": [[1, 2, 3], [4, 5, 6]]}}
    )["outputs"]["total"] == [6, 15]


def test_classify_regress_and_multi_inference_match_rest(server):
    rest_server, stub, _ = server
    examples = [_example(2.0), _example(-4.0)]
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "classify_x"
    request.input.example_list.examples.extend(examples)
    result = stub.Classify(request, timeout=30).result
    got = [[(c.label, round(c.score, 5)) for c in row.classes] for row in result.classifications]
    assert got == [[("pos", 4.0), ("neg", -4.0)], [("pos", 1.0), ("neg", -1.0)]]
    rest = _rest(rest_server, ":classify", {"signature_name": "classify_x",
                                            "examples": [{"x": 2.0}, {"x": -4.0}]})
    rest_rows = rest.get("results", rest.get("result"))
    assert [[(label, round(score, 5)) for label, score in row] for row in rest_rows] == got

    request = regression_pb2.RegressionRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "regress_x"
    context = request.input.example_list_with_context
    context.context.features.feature["unused"].int64_list.value.append(1)
    context.examples.extend(examples)
    values = [r.value for r in stub.Regress(request, timeout=30).result.regressions]
    assert values == [4.0, 1.0]
    # A feature in both the context and an example is refused, over gRPC as over REST.
    context.context.CopyFrom(_example(10.0))
    with pytest.raises(grpc.RpcError) as error:
        stub.Regress(request, timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.value.details() == "examples[0]: features ['x'] are also in 'context'"
    rest = _rest(rest_server, ":regress", {"signature_name": "regress_x",
                                           "examples": [{"x": 2.0}, {"x": -4.0}]})
    assert rest.get("results", rest.get("result")) == values

    request = inference_pb2.MultiInferenceRequest()
    for signature, method in (("classify_x", "tensorflow/serving/classify"),
                              ("regress_x", "tensorflow/serving/regress")):
        task = request.tasks.add()
        task.model_spec.name, task.model_spec.signature_name = "half", signature
        task.method_name = method
    request.input.example_list.examples.extend(examples)
    results = stub.MultiInference(request, timeout=30).results
    assert [r.model_spec.signature_name for r in results] == ["classify_x", "regress_x"]
    assert [c.score for c in results[0].classification_result.classifications[0].classes] == [4.0, -4.0]
    assert [r.value for r in results[1].regression_result.regressions] == values


def test_metadata_and_status_match_rest(server):
    rest_server, stub, model_stub = server
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = "half"
    request.metadata_field.append("signature_def")
    response = stub.GetModelMetadata(request, timeout=30)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    rest = _rest(rest_server, "/metadata")["metadata"]["signature_def"]["signature_def"]
    assert set(signature_map.signature_def) == set(rest) == {
        "serving_default", "regress_x", "classify_x", "ids", "__saved_model_init_op"}
    assert signature_map.signature_def["regress_x"].method_name == "tensorflow/serving/regress"

    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "half"
    status = model_stub.GetModelStatus(request, timeout=30).model_version_status
    assert [(s.version, s.state) for s in status] == [
        (7, get_model_status_pb2.ModelVersionStatus.AVAILABLE)]
    assert _rest(rest_server, "")["model_version_status"][0]["state"] == "AVAILABLE"


@pytest.mark.parametrize("change, code", [
    (lambda r: setattr(r.model_spec, "name", "nope"), grpc.StatusCode.NOT_FOUND),
    (lambda r: r.model_spec.version.__setattr__("value", 8), grpc.StatusCode.NOT_FOUND),
    (lambda r: setattr(r.model_spec, "version_label", "stable"), grpc.StatusCode.INVALID_ARGUMENT),
    # predict_util.cc RunPredict: an unknown signature is FAILED_PRECONDITION.
    (lambda r: setattr(r.model_spec, "signature_name", "nope"), grpc.StatusCode.FAILED_PRECONDITION),
    (lambda r: r.inputs["x"].CopyFrom(tf.make_tensor_proto([1], dtype=tf.int64)),
     grpc.StatusCode.INVALID_ARGUMENT),
    (lambda r: r.inputs["z"].CopyFrom(tf.make_tensor_proto([1.0])), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda r: r.output_filter.append("nope"), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_errors_have_tf_serving_status_codes(server, change, code):
    _, stub, _ = server
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0], dtype=tf.float32))
    change(request)
    with pytest.raises(grpc.RpcError) as error:
        stub.Predict(request, timeout=30)
    assert error.value.code() == code, error.value.details()


def test_a_regress_call_on_a_predict_signature_is_refused(server):
    _, stub, _ = server
    request = regression_pb2.RegressionRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "classify_x"
    request.input.example_list.examples.append(_example(1.0))
    with pytest.raises(grpc.RpcError) as error:
        stub.Regress(request, timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "tensorflow/serving/regress" in error.value.details()


def test_grpc_requests_are_counted_in_the_prometheus_metrics(server):
    """TF Serving counts every entrypoint in `:tensorflow:serving:request_count` and labels its
    latency histogram with `entrypoint` (servables/tensorflow/util.cc, RecordRequestLatency)."""
    rest_server, stub, _ = server
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0], dtype=tf.float32))
    stub.Predict(request, timeout=30)
    request.output_filter.append("nope")
    with pytest.raises(grpc.RpcError):
        stub.Predict(request, timeout=30)
    url = f"http://127.0.0.1:{rest_server.server_address[1]}/monitoring/prometheus/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        lines = response.read().decode().splitlines()
    assert any(line.startswith(':tensorflow:serving:request_latency_count{model_name="half",'
                               'API="predict",entrypoint="GRPC"}') for line in lines)
    assert any(line.startswith(':tensorflow:serving:request_count{model_name="half",'
                               'status="INVALID_ARGUMENT"}') for line in lines)


def test_reload_config_needs_a_model_config_file(server):
    _, _, model_stub = server
    with pytest.raises(grpc.RpcError) as error:
        model_stub.HandleReloadConfigRequest(model_management_pb2.ReloadConfigRequest(),
                                             timeout=30)
    assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "--model_config_file" in error.value.details()


def _rest_error(server, path, body):
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/{path}"
    data = None if body is None else json.dumps(body).encode()
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30)
    return error.value.code, json.loads(error.value.read())["error"]


@pytest.mark.parametrize("name, version, label, status, message", [
    ("nope", None, None, 404, "Servable not found for request: Latest(nope)"),
    ("half", 8, None, 404, "Servable not found for request: Specific(half, 8)"),
    ("half", None, "stable", 400, "Unrecognized servable version label: stable"),
    # ServerCore::GetModelVersionForLabel: a label of a model it does not serve is unrecognized.
    ("nope", None, "stable", 400, "Unrecognized servable version label: stable"),
])
def test_rest_and_grpc_resolve_a_model_spec_alike(server, name, version, label, status, message):
    """One server core decides for both front ends, in TF Serving's words and codes."""
    rest_server, stub, _ = server
    path = name + (f"/versions/{version}" if version else "") + (f"/labels/{label}" if label else "")
    assert _rest_error(rest_server, path + ":predict", {"instances": [1.0]}) == (status, message)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    if version:
        request.model_spec.version.value = version
    if label:
        request.model_spec.version_label = label
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0], dtype=tf.float32))
    with pytest.raises(grpc.RpcError) as error:
        stub.Predict(request, timeout=30)
    code = {404: grpc.StatusCode.NOT_FOUND, 400: grpc.StatusCode.INVALID_ARGUMENT}[status]
    assert (error.value.code(), error.value.details()) == (code, message)
