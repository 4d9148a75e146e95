"""--export_precision=int8 writes model.tflite into the version; --prefer_tflite_model serves it
over REST and gRPC with answers close to the float32 SavedModel's of the same version."""

import json
import os
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
    started = {name: serving.start_python_server(base, "albert", port=0, grpc_port=0,
                                                 prefer_tflite_model=prefer)
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
    with pytest.raises(urllib.error.HTTPError) as error:
        _rest(started["int8"], ":predict", {"signature_name": "ids", "inputs": {
            "input_ids": [[2, 99999, 3]], "input_mask": [[1, 1, 1]], "segment_ids": [[0, 0, 0]]}})
    assert error.value.code == 400 and "TFLite" in json.loads(error.value.read())["error"]


def test_a_version_without_model_tflite_is_served_from_its_saved_model(tmp_path, caplog):
    base = str(tmp_path / "half")
    write_version(base, 3)
    server = serving.start_python_server(base, "albert", port=0, prefer_tflite_model=True)
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
