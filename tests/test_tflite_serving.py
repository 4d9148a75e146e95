"""--export_precision=int8 writes model.tflite into the version; --prefer_tflite_model serves it
over REST and gRPC with answers close to the float32 SavedModel's of the same version."""

import json
import os
import re
import threading
import urllib.error
import urllib.request

from ai_edge_litert import interpreter as litert
import grpc
import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from albert_tf import serving
from albert_tf.export import classifier as classifier_export
from albert_tf.export import tflite
from albert_tf.serving import tflite_servable
from tests.serving_fixtures import tiny_classifier_signatures
from tests.serving_toy_model import write_version

# A random-weight head gives probabilities within 1e-3 of 0.5 whatever the encoder computes;
# a head 50 times larger spreads them, so a wrong encoder could not pass for a right one.
HEAD_SCALE = 50.0
SEED = 0
TOLERANCE = 0.01  # int8 weights, float32 activations: the largest difference seen was 0.0013


@pytest.fixture(scope="module")
def servers(tmp_path_factory, spm_model_file):
    keras.utils.set_random_seed(SEED)  # random weights whose answers spread (asserted below)
    signatures = tiny_classifier_signatures(spm_model_file)
    dummy = tf.zeros([1, 2], tf.int32)
    signatures.ids(dummy, dummy, dummy)
    head = signatures.model.head.output_weights
    head.assign(head * HEAD_SCALE)
    base = str(tmp_path_factory.mktemp("int8"))
    version_dir = classifier_export.write_saved_model(signatures, base, with_tflite=True)
    started = {name: serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="albert", rest_api_port=0, grpc_port=0,
        prefer_tflite_model=prefer))
               for name, prefer in (("float32", False), ("int8", True))}
    yield version_dir, started
    for server in started.values():
        server.shutdown()


def _rest(server, path, body=None):
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/albert{path}"
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=60) as response:
        return json.loads(response.read())


def _ids(batch=6, length=20, seed=0):
    ids = np.random.RandomState(seed).randint(5, 4000, size=(batch, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 12:] = 0  # one padded row: the mask must reach the TFLite attention too
    ids[1, 12:] = 0
    return ids, mask


def _rest_probabilities(server, ids, mask):
    answer = _rest(server, ":predict", {"signature_name": "ids", "inputs": {
        "input_ids": ids.tolist(), "input_mask": mask.tolist(),
        "segment_ids": np.zeros_like(ids).tolist()}})
    return np.array(answer["outputs"]["probabilities"]), answer["outputs"]["label"]


def test_the_export_writes_an_int8_model_and_ids_only_warmup(servers):
    version_dir, _ = servers
    path = os.path.join(version_dir, tflite.TFLITE_FILE)
    size = os.path.getsize(path)
    interpreter = litert.Interpreter(model_path=path)
    assert list(interpreter.get_signature_list()) == ["ids"]
    weight_types = {detail["dtype"] for detail in interpreter.get_tensor_details()}
    assert np.int8 in weight_types  # quantized weights, not a float32 copy
    float_variables = sum(os.path.getsize(os.path.join(version_dir, "variables", name))
                          for name in os.listdir(os.path.join(version_dir, "variables")))
    assert size < float_variables
    assert not [name for name in os.listdir(os.path.dirname(version_dir)) if name.startswith(".")]


def test_rest_answers_match_the_float32_version(servers):
    _, started = servers
    ids, mask = _ids()
    reference, reference_labels = _rest_probabilities(started["float32"], ids, mask)
    assert np.ptp(reference[:, 0]) > 5 * TOLERANCE  # the answers differ between inputs
    answer, labels = _rest_probabilities(started["int8"], ids, mask)
    np.testing.assert_allclose(answer, reference, atol=TOLERANCE)
    clear = np.abs(reference[:, 0] - 0.5) > TOLERANCE
    assert clear.any() and [labels[i] for i in np.flatnonzero(clear)] == [
        reference_labels[i] for i in np.flatnonzero(clear)]


def test_grpc_answers_as_rest_does(servers):
    _, started = servers
    ids, mask = _ids(batch=3, length=9, seed=1)
    server = started["int8"]
    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "albert", "ids"
    for name, value in (("input_ids", ids), ("input_mask", mask),
                        ("segment_ids", np.zeros_like(ids))):
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}") as channel:
        response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
            request, timeout=60)
    grpc_probabilities = tf.make_ndarray(response.outputs["probabilities"])
    rest_probabilities, _ = _rest_probabilities(server, ids, mask)
    np.testing.assert_allclose(grpc_probabilities, rest_probabilities, rtol=1e-6)
    reference, _ = _rest_probabilities(started["float32"], ids, mask)
    np.testing.assert_allclose(grpc_probabilities, reference, atol=TOLERANCE)


def test_the_tflite_version_has_the_tflite_signatures_and_refuses_bad_ids(servers):
    _, started = servers
    signature_defs = _rest(started["int8"], "/metadata")["metadata"]["signature_def"][
        "signature_def"]
    assert list(signature_defs) == ["ids"]
    assert signature_defs["ids"]["outputs"]["probabilities"]["dtype"] == "DT_FLOAT"
    with pytest.raises(urllib.error.HTTPError) as error:
        _rest(started["int8"], ":predict", {"signature_name": "serving_default",
                                            "instances": ["x"]})
    assert error.value.code == 400 and "not found" in json.loads(error.value.read())["error"]


def _ids_inputs(ids, mask=None, segments=None):
    return {"input_ids": ids, "input_mask": mask or [[1] * len(row) for row in ids],
            "segment_ids": segments or [[0] * len(row) for row in ids]}


# The tiny model: vocab_size 4000, type_vocab_size 2, 64 positions.
BAD_INPUTS = {
    "segment id 7": (_ids_inputs([[2, 5, 3]], segments=[[0, 7, 0]]),
                     "input 'segment_ids': values must be in [0, 2) (type_vocab_size); got 7"),
    "id outside the vocabulary": (_ids_inputs([[2, 99999, 3]]),
                                  "input 'input_ids': values must be in [0, 4000) (vocab_size); "
                                  "got 99999"),
    "negative id": (_ids_inputs([[2, -1, 3]]),
                    "input 'input_ids': values must be in [0, 4000) (vocab_size); got -1"),
    "70 tokens": (_ids_inputs([[5] * 70]), "input 'input_ids': a sequence of 70 tokens is "
                                           "longer than the model's 64 positions "
                                           "(max_position_embeddings)"),
    "longer input_mask": (_ids_inputs([[2, 5, 3]], mask=[[1, 1, 1, 1]]),
                          "input 'input_mask': shape [1, 4] differs from input 'input_ids''s "
                          "[1, 3]; they must be equal"),
}


# The request core adds what the signature takes to an input's error.
TAKES = ' [signature "ids" takes inputs: input_ids (DT_INT32), input_mask (DT_INT32), segment_ids (DT_INT32)]'


def _refusal(server, inputs):
    with pytest.raises(urllib.error.HTTPError) as error:
        _rest(server, ":predict", {"signature_name": "ids", "inputs": inputs})
    return error.value.code, json.loads(error.value.read())["error"]


def test_bad_int8_inputs_are_refused_naming_the_input(servers):
    """As the float32 SavedModel refuses them (its in-graph asserts), each refusal alone: the
    interpreter's error reporter keeps every message, none may reach a later answer."""
    _, started = servers
    for name, (inputs, message) in list(BAD_INPUTS.items()) * 2:
        assert _refusal(started["int8"], inputs) == (400, message + TAKES), name
        assert _refusal(started["float32"], inputs)[0] == 400, name


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_empty_sequences_are_refused_naming_the_input_over_rest_and_grpc(servers, precision):
    _, started = servers
    message = (r"input '(input_ids|input_mask|segment_ids)': empty sequences \(shape \[1, 0\]\); "
               r"each row needs at least one element")
    code, text = _refusal(started[precision], _ids_inputs([[]], [[]], [[]]))
    assert code == 400 and re.fullmatch(message + re.escape(TAKES), text)
    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "albert", "ids"
    for name in ("input_ids", "input_mask", "segment_ids"):
        request.inputs[name].CopyFrom(tf.make_tensor_proto(np.zeros([1, 0], np.int32)))
    with grpc.insecure_channel(f"127.0.0.1:{started[precision].grpc.port}") as channel:
        with pytest.raises(grpc.RpcError) as error:
            prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=60)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.fullmatch(message, error.value.details())


def test_an_interpreter_error_carries_no_earlier_message():
    """TFLite's error reporter keeps every message: the second error must be its own only."""
    class Lookup(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.Variable(np.ones([10, 4], np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="ids")])
        def lookup(self, ids):
            return {"rows": tf.gather(self.table, ids)}
    module = Lookup()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.lookup.get_concrete_function()], module)
    interpreter = litert.Interpreter(model_content=converter.convert())
    (name,) = interpreter.get_signature_list()
    signature = tflite_servable.TfliteSignature(interpreter, name, threading.Lock())
    messages = []
    for ids in ([1, 50], [60, 2]):
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            signature(ids=tf.constant(ids, tf.int32))
        messages.append(error.value.message)
    assert messages[0] == messages[1] and messages[0].count("out of bounds") == 1


def test_a_version_without_model_tflite_is_served_from_its_saved_model(tmp_path, caplog):
    base = str(tmp_path / "half")
    write_version(base, 3)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="albert", rest_api_port=0, prefer_tflite_model=True))
    try:
        assert _rest(server, ":predict", {"instances": [2.0]}) == {"predictions": [4.0]}
    finally:
        server.shutdown()
    assert any("has no model.tflite" in record.getMessage() for record in caplog.records)


def test_concurrent_requests_get_their_own_answers(servers):
    """The one interpreter of a version is shared by every request thread."""
    from concurrent.futures import ThreadPoolExecutor
    _, started = servers
    requests = [_ids(batch=2, length=8 + seed, seed=seed) for seed in range(12)]
    expected = [_rest_probabilities(started["int8"], *request)[0] for request in requests]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda request: _rest_probabilities(started["int8"], *request)[0],
                                requests * 3))
    for index, answer in enumerate(answers):
        np.testing.assert_allclose(answer, expected[index % len(requests)], rtol=1e-6)


def test_the_tflite_and_saved_model_servables_are_siblings():
    """Both load their own signatures and share the input checks of one parent; the TFLite
    servable is not a SavedModel servable with its constructor copied."""
    from albert_tf.serving import model_runner
    assert issubclass(tflite_servable.TfliteRunner, model_runner.Servable)
    assert issubclass(model_runner.ModelRunner, model_runner.Servable)
    assert not issubclass(tflite_servable.TfliteRunner, model_runner.ModelRunner)
    assert "check" not in vars(model_runner.ModelRunner)  # one set of input checks
