"""One request core: the same request sent over REST and over gRPC gets the same answer, and
the same error code and text, because both front ends call the same Predict, Classify, Regress
and GetModelMetadata on TF Serving's protos (http_rest_api_handler.cc calls the impls the gRPC
service calls). The requests are those of TF Serving's tensorflow_model_server_test.py, which
sends half_plus_two the same calls over both APIs (testPredict / testPredictREST,
testPredictColumnarREST, testClassify / testClassifyREST, testRegress / testRegressREST,
testMultiInference, testGetModelMetadata / testGetModelMetadataREST)."""

import json
import urllib.error
import urllib.request

import grpc
from google.protobuf import json_format
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, inference_pb2,
                                     predict_pb2, prediction_service_pb2_grpc, regression_pb2)

from albert_tf import serving
from albert_tf.serving import json_values, request_core, rest_json, tensor_protos
from tests.serving_toy_model import write_version

_HTTP_STATUS = {grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404,
                grpc.StatusCode.FAILED_PRECONDITION: 400}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus"))
    write_version(base, 3)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="half", rest_api_port=0, grpc_port=0))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    yield server, prediction_service_pb2_grpc.PredictionServiceStub(channel)
    channel.close()
    server.shutdown()


def _rest(server, verb, body):
    """(HTTP status, JSON body) of a REST call to model `half`."""
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/half{verb}"
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _grpc_error(call, request):
    with pytest.raises(grpc.RpcError) as error:
        call(request, timeout=30)
    return error.value.code(), error.value.details()


def _example(**features):
    return tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
        for name, value in features.items()}))


def test_predict_row_and_columnar_answers_are_the_grpc_answers(both):
    server, stub = both
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([0.1, 2.0, 1e-7], dtype=tf.float32))
    y = tf.make_ndarray(stub.Predict(request, timeout=30).outputs["y"])
    np.testing.assert_allclose(y, [3.05, 4.0, 3.0], rtol=1e-6)  # 0.5 x + 3
    written = json_values.float32_json(y)  # TF Serving's float32 text: 3.05, not 3.049999952
    assert written[0] == 3.05
    assert _rest(server, ":predict", {"instances": [0.1, 2.0, 1e-7]}) == (
        200, {"predictions": written})
    assert _rest(server, ":predict", {"inputs": [0.1, 2.0, 1e-7]}) == (200, {"outputs": written})

    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "ids"
    request.inputs["ids"].CopyFrom(tf.make_tensor_proto(np.array([[1, 2], [4, 5]], np.int32)))
    outputs = stub.Predict(request, timeout=30).outputs
    columns = {name: tf.make_ndarray(outputs[name]).tolist() for name in outputs}
    assert columns == {"total": [3, 9], "first": [1, 4]}
    assert _rest(server, ":predict", {"signature_name": "ids", "inputs": {"ids": [[1, 2], [4, 5]]}}
                 ) == (200, {"outputs": columns})
    assert _rest(server, ":predict", {"signature_name": "ids", "instances": [[1, 2], [4, 5]]}) == (
        200, {"predictions": [{"total": 3, "first": 1}, {"total": 9, "first": 4}]})


def test_a_predict_input_the_signature_refuses_is_the_same_error(both):
    """The core's shape check answers both: REST adds what the signature takes."""
    server, stub = both
    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "ids"
    request.inputs["ids"].CopyFrom(tf.make_tensor_proto(np.array([1, 2, 3], np.int32)))
    code, text = _grpc_error(stub.Predict, request)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert text == "input 'ids': expected rank 2 [None, None], got shape [3]"
    assert _rest(server, ":predict", {"signature_name": "ids", "inputs": {"ids": [1, 2, 3]}}) == (
        400, {"error": f'{text} [signature "ids" takes inputs: ids (DT_INT32)]'})


def test_classify_and_regress_answers_are_the_grpc_answers(both):
    server, stub = both
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "classify_x"
    request.input.example_list_with_context.context.CopyFrom(_example(unused=1.0))
    request.input.example_list_with_context.examples.extend([_example(x=0.1), _example(x=-4.0)])
    result = stub.Classify(request, timeout=30).result
    expected = [[[item.label, json_values.float32_json(item.score)] for item in row.classes]
                for row in result.classifications]
    assert expected == [[["pos", 3.05], ["neg", -3.05]], [["pos", 1.0], ["neg", -1.0]]]
    examples = {"signature_name": "classify_x", "context": {"unused": 1.0},
                "examples": [{"x": 0.1}, {"x": -4.0}]}
    assert _rest(server, ":classify", examples) == (200, {"results": expected})

    request = regression_pb2.RegressionRequest()
    request.model_spec.name, request.model_spec.signature_name = "half", "regress_x"
    request.input.example_list.examples.extend([_example(x=0.1), _example(x=-4.0)])
    values = [item.value for item in stub.Regress(request, timeout=30).result.regressions]
    assert _rest(server, ":regress", {"signature_name": "regress_x",
                                      "examples": [{"x": 0.1}, {"x": -4.0}]}) == (
        200, {"results": json_values.float32_json(np.array(values, np.float32))})
    assert json_values.float32_json(np.array(values, np.float32)) == [3.05, 1.0]


@pytest.mark.parametrize("verb, signature, features, text", [
    # input.proto leaves a feature in both an example and its context undefined: both refuse it.
    (":regress", "regress_x", {"context": {"x": 1.0}, "examples": [{"x": 2.0}]},
     "examples[0]: features ['x'] are also in 'context'"),
    (":classify", "classify_x", {"context": {"x": 1.0}, "examples": [{"y": 5.0}, {"x": 2.0}]},
     "examples[1]: features ['x'] are also in 'context'"),
    # classifier.cc, regressor.cc: the signature is found, then its method checked, in their words.
    (":classify", "regress_x", {"examples": [{"x": 2.0}]},
     "Expected classification signature method_name to be tensorflow/serving/classify. Was: "
     "tensorflow/serving/regress"),
    (":regress", "nope", {"examples": [{"x": 2.0}]}, "No signature was found with the name: nope"),
])
def test_classify_and_regress_refusals_are_the_same_over_both(both, verb, signature, features,
                                                              text):
    server, stub = both
    kind = classification_pb2.ClassificationRequest if verb == ":classify" else (
        regression_pb2.RegressionRequest)
    request = kind()
    request.model_spec.name, request.model_spec.signature_name = "half", signature
    request.input.CopyFrom(rest_json.examples_input(features))
    code, details = _grpc_error(stub.Classify if verb == ":classify" else stub.Regress, request)
    assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT, text)
    assert _rest(server, verb, {"signature_name": signature, **features}) == (
        _HTTP_STATUS[code], {"error": text})


def test_the_rest_examples_are_the_grpc_input():
    """json_tensor_test.cc RequestWithContext: `context` and `examples` become an
    ExampleListWithContext, as a gRPC client writes it."""
    model_input = rest_json.examples_input({"context": {"c": 1.0}, "examples": [{"x": 2.0}]})
    assert model_input.WhichOneof("kind") == "example_list_with_context"
    assert model_input.example_list_with_context.context == _example(c=1.0)
    assert list(model_input.example_list_with_context.examples) == [_example(x=2.0)]
    assert rest_json.examples_input({"examples": [{"x": 2.0}]}).WhichOneof("kind") == (
        "example_list")


def test_multi_inference_answers_what_classify_and_regress_answer(both):
    """gRPC only (TF Serving's REST API has no MultiInference)."""
    _, stub = both
    request = inference_pb2.MultiInferenceRequest()
    for signature, method in (("classify_x", "tensorflow/serving/classify"),
                              ("regress_x", "tensorflow/serving/regress")):
        task = request.tasks.add()
        task.model_spec.name, task.model_spec.signature_name = "half", signature
        task.method_name = method
    request.input.example_list.examples.extend([_example(x=0.1), _example(x=-4.0)])
    results = stub.MultiInference(request, timeout=30).results
    classify = classification_pb2.ClassificationRequest(input=request.input)
    classify.model_spec.name, classify.model_spec.signature_name = "half", "classify_x"
    regress = regression_pb2.RegressionRequest(input=request.input)
    regress.model_spec.name, regress.model_spec.signature_name = "half", "regress_x"
    assert results[0].classification_result == stub.Classify(classify, timeout=30).result
    assert results[1].regression_result == stub.Regress(regress, timeout=30).result


def test_metadata_is_the_grpc_response_as_json(both):
    server, stub = both
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = "half"
    request.metadata_field.append("signature_def")
    response = stub.GetModelMetadata(request, timeout=30)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    status, rest = _rest(server, "/metadata", None)
    assert status == 200
    assert rest["model_spec"] == {"name": "half", "signature_name": "", "version": "3"}
    assert rest["metadata"]["signature_def"] == json_format.MessageToDict(
        signature_map, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    assert rest["metadata"]["signature_def"]["signature_def"]["ids"]["inputs"]["ids"][
        "dtype"] == "DT_INT32"


def test_rest_predict_outputs_travel_as_tensor_content_grpc_as_typed_values(tmp_path):
    """predict_util.cc's two serializations: gRPC answers in `float_val` (kAsProtoField, TF
    Serving's default), the REST front end reads the core's answer back packed in bytes."""
    runner = serving.ModelRunner(write_version(str(tmp_path), 1), "half", 1)
    request = predict_pb2.PredictRequest()
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.arange(4, dtype=np.float32)))
    typed = request_core.predict(runner, request).outputs["y"]
    packed = request_core.predict(runner, request, as_proto_field=False).outputs["y"]
    assert list(typed.float_val) == [3.0, 3.5, 4.0, 4.5] and not typed.tensor_content
    assert not packed.float_val and len(packed.tensor_content) == 4 * 4
    np.testing.assert_array_equal(tf.make_ndarray(packed), tf.make_ndarray(typed))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16,
                                   np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                   np.bool_])
def test_tensor_protos_agree_with_tensorflows_converters(dtype):
    """The cheap converters against tf.make_tensor_proto / tf.make_ndarray, the reference."""
    array = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    for as_proto_field in (True, False):
        proto = tensor_protos.tensor_proto(array, as_proto_field)
        assert proto.dtype == tf.make_tensor_proto(array).dtype
        round_trip = tf.make_ndarray(proto)
        assert round_trip.dtype == array.dtype
        np.testing.assert_array_equal(round_trip, array)
    from_tf = tensor_protos.ndarray(tf.make_tensor_proto(array))
    assert from_tf.dtype == array.dtype
    np.testing.assert_array_equal(from_tf, array)


def test_tensor_protos_strings_and_malformed_content():
    strings = np.array([b"a\x00", b"\xff"], dtype=object)
    assert list(tensor_protos.ndarray(tensor_protos.tensor_proto(strings))) == [b"a\x00", b"\xff"]
    assert tensor_protos.tensor_proto(np.array([], dtype=object), dtype=tf.string).dtype == (
        tf.string.as_datatype_enum)
    proto = tf.make_tensor_proto(np.arange(6, dtype=np.float32).reshape(2, 3))
    proto.tensor_content = proto.tensor_content[:-4]  # one float short
    with pytest.raises(ValueError):
        tensor_protos.ndarray(proto)
