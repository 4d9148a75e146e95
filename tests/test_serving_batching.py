"""Server-side batching (TF Serving's --enable_batching / --batching_parameters_file): concurrent
requests share one model call, each caller gets its own rows, a full queue refuses at once."""

import concurrent.futures
import json
import threading
import time
import urllib.request

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.serving.batching import Batcher, BatchingParameters
from tests.serving_toy_model import write_version


class _Recorder:
    """A signature stand-in: records the batch sizes it is called with, answers y = 2 x."""

    def __init__(self, delay=0.0, gate=None):
        self.sizes, self.delay, self.gate = [], delay, gate
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.sizes.append(tuple(x.shape))
        if self.gate is not None:
            self.gate.wait(30)
        time.sleep(self.delay)
        return {"y": x * 2, "sum": tf.reduce_sum(x, axis=1)}


def _concurrently(batcher, function, inputs):
    with concurrent.futures.ThreadPoolExecutor(len(inputs)) as pool:
        return list(pool.map(lambda x: batcher.run(function, {"x": tf.constant(x)}), inputs))


def test_batching_parameters_file_is_tf_servings_text_format():
    parameters = BatchingParameters.parse("""
        max_batch_size { value: 32 }   # rows per model call
        batch_timeout_micros { value: 2000 }
        max_enqueued_batches { value: 4 }
        num_batch_threads { value: 2 }
        allowed_batch_sizes: 8
        allowed_batch_sizes: 32
        pad_variable_length_inputs: true
    """)
    assert (parameters.max_batch_size, parameters.batch_timeout_micros,
            parameters.max_enqueued_batches, parameters.num_batch_threads,
            parameters.allowed_batch_sizes, parameters.pad_variable_length_inputs) == (
        32, 2000, 4, 2, [8, 32], True)
    with pytest.raises(ValueError, match="line 2: unknown or unsupported batching parameter 'max_batch'"):
        BatchingParameters.parse("\nmax_batch { value: 3 }", "batching.txt")
    with pytest.raises(ValueError, match="must equal max_batch_size"):
        BatchingParameters.parse("max_batch_size { value: 32 } allowed_batch_sizes: 16")


def test_concurrent_requests_share_model_calls_and_get_their_own_rows():
    function = _Recorder(delay=0.05)
    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=1,
                                         max_enqueued_batches=100))
    inputs = [[[i, i + 1]] for i in range(24)]
    results = _concurrently(batcher, function, inputs)
    for x, result in zip(inputs, results):
        np.testing.assert_array_equal(result["y"], np.array(x) * 2)
        np.testing.assert_array_equal(result["sum"], [sum(x[0])])
    assert len(function.sizes) < 12 and max(size[0] for size in function.sizes) <= 8
    assert sum(size[0] for size in function.sizes) == 24


def test_allowed_batch_sizes_pad_and_variable_lengths_share_a_batch():
    gate = threading.Event()
    function = _Recorder(gate=gate)
    batcher = Batcher(BatchingParameters(max_batch_size=4, num_batch_threads=1,
                                         allowed_batch_sizes=[4], pad_variable_length_inputs=True))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.run, function, {"x": tf.constant([[9, 9, 9]])})
        while not function.sizes:
            time.sleep(0.01)  # the first batch runs (and waits), the next three gather
        rest = [pool.submit(batcher.run, function, {"x": tf.constant(x)})
                for x in ([[1]], [[1, 2], [3, 4]])]
        time.sleep(0.2)
        gate.set()
        answers = [future.result(30) for future in [first] + rest]
    assert function.sizes == [(4, 3), (4, 2)]  # padded to the allowed size, lengths to the longest
    np.testing.assert_array_equal(answers[1]["y"], [[2, 0]])  # zero padding
    np.testing.assert_array_equal(answers[1]["sum"], [1])
    np.testing.assert_array_equal(answers[2]["sum"], [3, 7])


def test_a_full_queue_answers_unavailable_at_once():
    gate = threading.Event()
    function = _Recorder(gate=gate)
    batcher = Batcher(BatchingParameters(max_batch_size=1, num_batch_threads=1,
                                         max_enqueued_batches=1))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        running = pool.submit(batcher.run, function, {"x": tf.constant([[1]])})
        while not function.sizes:
            time.sleep(0.01)
        queued = pool.submit(batcher.run, function, {"x": tf.constant([[2]])})
        time.sleep(0.1)
        started = time.monotonic()
        with pytest.raises(serving.ServingError, match="queue .* is full") as error:
            batcher.run(function, {"x": tf.constant([[3]])})
        assert error.value.status == 503 and time.monotonic() - started < 1
        gate.set()
        assert running.result(30)["sum"].tolist() == [1] and queued.result(30)["sum"].tolist() == [2]


def test_rest_and_grpc_answers_are_unchanged_with_batching(tmp_path):
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
    write_version(str(tmp_path), 1)
    server = serving.start_python_server(
        str(tmp_path), "m", port=0, grpc_port=0,
        batching_parameters=BatchingParameters(max_batch_size=16, batch_timeout_micros=1000))
    try:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(
            grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}"))

        def grpc_call(x):
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "m"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto([x], dtype=tf.float32))
            return tf.make_ndarray(stub.Predict(request, timeout=30).outputs["y"]).tolist()

        def rest_call(x):
            url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/m:predict"
            body = json.dumps({"instances": [x]}).encode()
            with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30) as r:
                return json.loads(r.read())["predictions"]

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            got = list(pool.map(lambda i: (grpc_call if i % 2 else rest_call)(float(i)), range(64)))
        assert got == [[0.5 * i + 3.0] for i in range(64)]
    finally:
        server.shutdown()
