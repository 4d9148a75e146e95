"""TF Serving's own gRPC cases, ported: each test names the TF Serving file and test it comes
from (tensorflow/serving, tensorflow_serving/...), and asserts the status code, response fields
and, where TF Serving's test or source asserts one, the error text. The model is the toy
half-plus model (y = 0.5 x + 3, TF Serving's half_plus_three) at version 7, driven by the stock
`PredictionServiceStub` / `ModelServiceStub`."""

import grpc
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2,
                                     get_model_status_pb2, inference_pb2, model_service_pb2_grpc,
                                     predict_pb2, prediction_service_pb2_grpc, regression_pb2)

from albert_tf import serving
from tests.serving_toy_model import write_version

VERSION = 7
CLASSIFY, REGRESS = "tensorflow/serving/classify", "tensorflow/serving/regress"
PREDICT = "tensorflow/serving/predict"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus_three"))
    write_version(base, VERSION)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    yield (prediction_service_pb2_grpc.PredictionServiceStub(channel),
           model_service_pb2_grpc.ModelServiceStub(channel))
    channel.close()
    server.shutdown()


def _fails(call, request, code, text=None):
    with pytest.raises(grpc.RpcError) as error:
        call(request, timeout=30)
    assert error.value.code() == code, error.value.details()
    if text is not None:
        assert text in error.value.details()
    return error.value.details()


def _predict_request(name="default", signature=""):
    """VerifyPredictRequest of tensorflow_model_server_test_base.py: x = [2.0], filter y."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = name, signature
    request.inputs["x"].dtype = types_pb2.DT_FLOAT
    request.inputs["x"].float_val.append(2.0)
    request.inputs["x"].tensor_shape.dim.add().size = 1
    request.output_filter.append("y")
    return request


def _add_example(model_input, x=2.0):
    example = model_input.example_list.examples.add()
    example.features.feature["x"].float_list.value.append(x)


def _verify_model_spec(spec, name, signature):
    """_VerifyModelSpec of tensorflow_model_server_test_base.py."""
    assert (spec.name, spec.signature_name, spec.version.value) == (name, signature, VERSION)


# --- tensorflow_model_server_test.py (the gRPC half) ----------------------------------------

def test_get_model_status(stubs):
    """tensorflow_model_server_test.py testGetModelStatus."""
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "default"
    result = stubs[1].GetModelStatus(request, timeout=30)
    assert len(result.model_version_status) == 1
    assert result.model_version_status[0].version == VERSION
    assert result.model_version_status[0].status.error_code == 0


def test_get_model_metadata(stubs):
    """tensorflow_model_server_test.py testGetModelMetadata."""
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = "default"
    request.metadata_field.append("signature_def")
    result = stubs[0].GetModelMetadata(request, timeout=30)
    assert result.model_spec.name == "default" and result.model_spec.version.value == VERSION
    assert len(result.metadata) == 1 and "signature_def" in result.metadata


def test_classify_regress_and_multi_inference(stubs):
    """tensorflow_model_server_test.py _TestClassify, _TestRegress, _TestMultiInference (with
    this model's signature names and y = 0.5 x + 3: 4.0 for x = 2)."""
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = "default", "classify_x"
    _add_example(request.input)
    result = stubs[0].Classify(request, timeout=30)
    assert len(result.result.classifications) == 1
    assert result.result.classifications[0].classes[0].score == 4.0
    _verify_model_spec(result.model_spec, "default", "classify_x")

    request = regression_pb2.RegressionRequest()
    request.model_spec.name, request.model_spec.signature_name = "default", "regress_x"
    _add_example(request.input)
    result = stubs[0].Regress(request, timeout=30)
    assert [r.value for r in result.result.regressions] == [4.0]
    _verify_model_spec(result.model_spec, "default", "regress_x")

    request = inference_pb2.MultiInferenceRequest()
    for signature, method in (("regress_x", REGRESS), ("classify_x", CLASSIFY)):
        task = request.tasks.add()
        task.model_spec.name, task.model_spec.signature_name = "default", signature
        task.method_name = method
    _add_example(request.input)
    result = stubs[0].MultiInference(request, timeout=30)
    assert len(result.results) == 2
    assert result.results[0].regression_result.regressions[0].value == 4.0
    assert result.results[1].classification_result.classifications[0].classes[0].score == 4.0
    for task, answer in zip(request.tasks, result.results):
        _verify_model_spec(answer.model_spec, "default", task.model_spec.signature_name)


def test_predict_answers_in_float_val(stubs):
    """tensorflow_model_server_test.py testPredictSavedModel (VerifyPredictRequest): the output
    is DT_FLOAT with its one value in `float_val` (TF Serving's AsProtoField), and the model
    spec echoes the default signature."""
    result = stubs[0].Predict(_predict_request(signature="serving_default"), timeout=30)
    assert "y" in result.outputs
    assert result.outputs["y"].dtype == types_pb2.DT_FLOAT
    assert list(result.outputs["y"].float_val) == [4.0]
    _verify_model_spec(result.model_spec, "default", "serving_default")


# --- Missing or empty ModelSpec --------------------------------------------------------------

def _without_spec(kind):
    """A request of `kind` with no model_spec at all."""
    return {"predict": predict_pb2.PredictRequest, "classify": classification_pb2.ClassificationRequest,
            "regress": regression_pb2.RegressionRequest,
            "metadata": get_model_metadata_pb2.GetModelMetadataRequest,
            "status": get_model_status_pb2.GetModelStatusRequest}[kind]()


def _call(stubs, kind):
    prediction, model = stubs
    return {"predict": prediction.Predict, "classify": prediction.Classify,
            "regress": prediction.Regress, "metadata": prediction.GetModelMetadata,
            "status": model.GetModelStatus}[kind]


@pytest.mark.parametrize("kind", ["predict", "classify", "regress", "metadata", "status"])
def test_a_request_without_model_spec_is_invalid(stubs, kind):
    """predict_impl_test.cc MissingOrEmptyModelSpec, classification_service_test.cc and
    regression_service_test.cc InvalidModelSpec, get_model_metadata_impl_test.cc
    MissingOrEmptyModelSpec, get_model_status_impl_test.cc MissingOrEmptyModelSpecFailure:
    INVALID_ARGUMENT, "Missing ModelSpec" (predict_impl.cc and the others)."""
    request = _without_spec(kind)
    if kind == "metadata":
        request.metadata_field.append("signature_def")
    _fails(_call(stubs, kind), request, grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")


@pytest.mark.parametrize("kind", ["predict", "classify", "regress", "metadata"])
def test_an_empty_model_name_is_invalid_and_another_name_not_found(stubs, kind):
    """The same tests' second and third cases: a ModelSpec without a name is INVALID_ARGUMENT
    ("ModelSpec has no name specified.", server_core.cc ServableRequestFromModelSpec), an
    unknown name NOT_FOUND."""
    request = _without_spec(kind)
    if kind == "metadata":
        request.metadata_field.append("signature_def")
    request.model_spec.SetInParent()
    _fails(_call(stubs, kind), request, grpc.StatusCode.INVALID_ARGUMENT,
           "ModelSpec has no name specified.")
    request.model_spec.name = "test"
    _fails(_call(stubs, kind), request, grpc.StatusCode.NOT_FOUND,
           "Servable not found for request: Latest(test)")


# --- GetModelStatus (get_model_status_impl_test.cc, get_model_status_impl.cc) -----------------

def test_model_status_not_found_texts_and_labels_ignored(stubs):
    """get_model_status_impl_test.cc InvalidModelNameFailure, InvalidModelVersionFailure,
    SingleVersionSuccess; get_model_status_impl.cc lists every version when the spec has no
    version number, a version label included."""
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "nonexistent_model"
    _fails(stubs[1].GetModelStatus, request, grpc.StatusCode.NOT_FOUND,
           "Could not find any versions of model nonexistent_model")
    request.model_spec.name = "default"
    request.model_spec.version.value = 99
    _fails(stubs[1].GetModelStatus, request, grpc.StatusCode.NOT_FOUND,
           "Could not find version 99 of model default")
    request.model_spec.version.value = VERSION
    status = stubs[1].GetModelStatus(request, timeout=30).model_version_status
    assert [(s.version, s.status.error_code, s.status.error_message) for s in status] == [
        (VERSION, 0, "")]
    request.model_spec.version_label = "no_such_label"
    status = stubs[1].GetModelStatus(request, timeout=30).model_version_status
    assert [(s.version, s.state) for s in status] == [
        (VERSION, get_model_status_pb2.ModelVersionStatus.AVAILABLE)]


# --- Predict (predict_impl_test.cc, predict_util.cc) ------------------------------------------

def test_predict_checks_its_inputs_and_output_filter_before_running(stubs):
    """predict_impl_test.cc EmptyInputList, InputTensorsDontMatchModelSpecInputs,
    InputTensorsHaveWrongType, OutputFiltersDontMatchModelSpecOutputs."""
    predict = stubs[0].Predict
    request = _predict_request()
    del request.inputs["x"]
    _fails(predict, request, grpc.StatusCode.INVALID_ARGUMENT,
           "input size does not match signature: 0!=1 len({}) != len({x}). Sent extra: {}. "
           "Missing but required: {x}.")
    request.inputs["key"].CopyFrom(tf.make_tensor_proto(["any_key"]))
    _fails(predict, request, grpc.StatusCode.INVALID_ARGUMENT,
           "Sent extra: {key}. Missing but required: {x}.")
    request = _predict_request()
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(["any_key"]))
    _fails(predict, request, grpc.StatusCode.INVALID_ARGUMENT)

    request = _predict_request()
    request.output_filter[:] = ["output_filter"]
    _fails(predict, request, grpc.StatusCode.INVALID_ARGUMENT,
           "output tensor alias not found in signature: output_filter Outputs expected to be "
           "in the set {y}.")
    request.output_filter[:] = ["y"]
    assert list(predict(request, timeout=30).outputs) == ["y"]
    request.output_filter.append("y")
    _fails(predict, request, grpc.StatusCode.INVALID_ARGUMENT, "duplicate output tensor alias: y")


def test_an_unknown_signature_is_a_failed_precondition_in_predict_only(stubs):
    """predict_util.cc RunPredict: FAILED_PRECONDITION, 'Serving signature key "..." not
    found.'; classification_service_test.cc InvalidSignature: INVALID_ARGUMENT in Classify."""
    _fails(stubs[0].Predict, _predict_request(signature="nope"),
           grpc.StatusCode.FAILED_PRECONDITION, 'Serving signature key "nope" not found.')
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = "default", "invalid_signature_name"
    _add_example(request.input)
    _fails(stubs[0].Classify, request, grpc.StatusCode.INVALID_ARGUMENT)


# --- MultiInference (multi_inference_test.cc, multi_inference.cc) ----------------------------

def _multi(*tasks, with_input=True):
    request = inference_pb2.MultiInferenceRequest()
    for name, signature, method in tasks:
        task = request.tasks.add()
        task.model_spec.name, task.model_spec.signature_name = name, signature
        task.method_name = method
    if with_input:
        _add_example(request.input)
    return request


@pytest.mark.parametrize("request_, code, text", [
    # MissingInputTest
    (_multi(("default", "regress_x", REGRESS), with_input=False),
     grpc.StatusCode.INVALID_ARGUMENT, "Input is empty"),
    # UndefinedSignatureTest
    (_multi(("default", "ThisSignatureDoesNotExist", REGRESS)),
     grpc.StatusCode.INVALID_ARGUMENT, "signature not found"),
    # InconsistentModelSpecsInRequestTest
    (_multi(("default", "regress_x", REGRESS), ("ModelDoesNotExist", "regress_x", REGRESS)),
     grpc.StatusCode.INVALID_ARGUMENT, "must access the same model name"),
    # EvaluateDuplicateSignaturesTest
    (_multi(("default", "regress_x", REGRESS), ("default", "regress_x", REGRESS)),
     grpc.StatusCode.INVALID_ARGUMENT, "Duplicate evaluation of signature: regress_x"),
    # UsupportedSignatureTypeTest
    (_multi(("default", "serving_default", PREDICT)),
     grpc.StatusCode.UNIMPLEMENTED, "Unsupported signature"),
])
def test_multi_inference_refusals(stubs, request_, code, text):
    """multi_inference_test.cc, the test named on each case."""
    _fails(stubs[0].MultiInference, request_, code, text)


# --- GetModelMetadata (get_model_metadata_impl_test.cc) ---------------------------------------

def test_metadata_field_list_empty_or_invalid(stubs):
    """get_model_metadata_impl_test.cc EmptyOrInvalidMetadataFieldList, with a model named
    so that the field check itself answers (texts of get_model_metadata_impl.cc
    ValidateGetModelMetadataRequest and GetModelMetadataWithModelSpec)."""
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = "default"
    _fails(stubs[0].GetModelMetadata, request, grpc.StatusCode.INVALID_ARGUMENT,
           "GetModelMetadataRequest must specify at least one metadata_field")
    request.metadata_field.append("some_stuff")
    _fails(stubs[0].GetModelMetadata, request, grpc.StatusCode.INVALID_ARGUMENT,
           "Metadata field some_stuff is not supported")


def test_a_request_above_the_receive_limit_names_the_flag(tmp_path):
    """grpcio's "Received message larger than max" refusal (RESOURCE_EXHAUSTED) names the flag
    that raises the limit; a request within it is answered."""
    base = str(tmp_path)
    write_version(base, VERSION)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
        grpc_channel_arguments="grpc.max_receive_message_length=2000"))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    try:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        assert list(stub.Predict(_predict_request(), timeout=30).outputs["y"].float_val) == [4.0]
        large = _predict_request()
        large.inputs["x"].float_val.extend([1.0] * 999)
        large.inputs["x"].tensor_shape.dim[0].size = 1000
        details = _fails(stub.Predict, large, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         "Received message larger than max")
        assert "--grpc_channel_arguments=grpc.max_receive_message_length=" in details
    finally:
        channel.close()
        server.shutdown()
