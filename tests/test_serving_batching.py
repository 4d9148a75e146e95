"""Server-side batching (TF Serving's --enable_batching / --batching_parameters_file): concurrent
requests share one model call, each caller gets its own rows, a full queue refuses at once."""

import concurrent.futures
import inspect
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.serving import model_runner, server as server_lib
from albert_tf.serving.batching import Batcher, BatchingParameters, BatchingServable
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


def test_batching_parameters_file_is_read_by_protobufs_text_format_parser():
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
    # Angle brackets, list syntax, a thread pool name (one pool per model here anyway).
    parameters = BatchingParameters.parse(
        "max_batch_size < value: 16 > allowed_batch_sizes: [8, 16] thread_pool_name { value: 'p' }")
    assert (parameters.max_batch_size, parameters.allowed_batch_sizes) == (16, [8, 16])
    with pytest.raises(ValueError, match=re.escape(
            'batching.txt: Error parsing text-format tensorflow.serving.BatchingParameters: 2:1 : '
            'Message type "tensorflow.serving.BatchingParameters" has no field named "max_batch".')):
        BatchingParameters.parse("\nmax_batch { value: 3 }", "batching.txt")
    with pytest.raises(ValueError, match=re.escape(
            "Last entry in allowed_batch_sizes must match max_batch_size; last entry was 16; "
            "expected 32")):
        BatchingParameters.parse("max_batch_size { value: 32 } allowed_batch_sizes: 16")


@pytest.mark.parametrize("sizes", ["[16, 8, 16]", "[8, 8, 16]"])
def test_allowed_batch_sizes_must_increase_strictly(sizes):
    """TF Serving's batching_session.cc refuses an unsorted or repeated list (its text)."""
    with pytest.raises(ValueError, match=re.escape(
            f"b.txt: allowed_batch_sizes entries must be monotonically increasing; was "
            f"{sizes}")):
        BatchingParameters.parse(f"max_batch_size {{ value: 16 }} allowed_batch_sizes: {sizes}",
                                 "b.txt")


@pytest.mark.parametrize("text, message", [
    # TensorFlow's SharedBatchScheduler::Create and AddQueue refuse these (their texts).
    ("num_batch_threads { value: 0 }", "num_batch_threads must be positive; was 0"),
    ("max_batch_size { value: 0 }", "max_batch_size must be positive; was 0"),
    ("batch_timeout_micros { value: -1 }", "batch_timeout_micros must be non-negative; was -1"),
    ("max_enqueued_batches { value: 0 }", "max_enqueued_batches must be positive; was 0"),
    # Three years: a lone request would wait that long.
    ("batch_timeout_micros { value: 94608000000000 }", "batch_timeout_micros must be at most"),
    ("enable_large_batch_splitting { value: true }", "not supported by the built-in server"),
])
def test_batching_parameters_a_scheduler_cannot_use_are_refused(text, message):
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        BatchingParameters.parse(text, "b.txt")
    assert str(error.value).startswith("b.txt: ")


def test_num_batch_threads_unset_is_the_cpu_count():
    assert BatchingParameters.parse("max_batch_size { value: 4 }").num_batch_threads == (
        os.cpu_count() or 1)


def test_concurrent_requests_share_model_calls_and_get_their_own_rows():
    function = _Recorder(delay=0.05)
    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=1,
                                         max_enqueued_batches=100), model_runner.graph_call)
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
                                         allowed_batch_sizes=[4], pad_variable_length_inputs=True),
                      model_runner.graph_call)
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
                                         max_enqueued_batches=1), model_runner.graph_call)
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
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=str(tmp_path), model_name="m", rest_api_port=0, grpc_port=0,
        batching_parameters=BatchingParameters(max_batch_size=16, batch_timeout_micros=1000)))
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
        # graph calls wait at most this long for the GIL behind request threads (server.py)
        assert sys.getswitchinterval() == pytest.approx(server_lib.GIL_SWITCH_INTERVAL_SECS)
    finally:
        server.shutdown()


def test_a_failing_joined_batch_is_rerun_request_by_request():
    """A batch whose joined call fails: each caller is answered from a call of its own rows."""
    gate = threading.Event()
    calls = []

    def refuse_negative(x):  # the error quotes every row it was given, as TF's asserts do
        calls.append(x.numpy()[:, 0].tolist())
        gate.wait(30)
        if (x.numpy() < 0).any():
            raise tf.errors.InvalidArgumentError(None, None, f"negative in {x.numpy().tolist()}")
        return {"y": x * 2}

    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=1), model_runner.graph_call)
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        first = pool.submit(batcher.run, refuse_negative, {"x": tf.constant([[100]])})
        while not calls:
            time.sleep(0.01)  # the first batch runs (and waits), the next four gather
        rest = [pool.submit(batcher.run, refuse_negative, {"x": tf.constant([[value]])})
                for value in (101, -7, 102, 103)]
        time.sleep(0.2)
        gate.set()
        assert first.result(30)["y"].tolist() == [[200]]
        with pytest.raises(serving.ServingError) as error:
            rest[1].result(30)
        assert [rest[i].result(30)["y"].tolist() for i in (0, 2, 3)] == [[[202]], [[204]], [[206]]]
    assert sorted(calls[1]) == [-7, 101, 102, 103]  # the joined call, then one call each
    assert sorted(calls[2:]) == [[-7], [101], [102], [103]]
    assert str(error.value) == "negative in [[-7]]" and error.value.status == 400


class _Vocabulary(tf.Module):
    """Token ids checked against a vocabulary of 100 by TF's own assert, whose error quotes
    the ids of the whole batch it was given."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")])
    def ids(self, ids):
        with tf.control_dependencies([tf.debugging.assert_less(ids, 100)]):
            return {"total": tf.reduce_sum(ids, axis=1)}


def test_one_bad_request_in_a_batch_fails_alone_over_rest(tmp_path):
    """--enable_batching: one request with an out-of-vocabulary id among good ones sharing
    its batches; the good ones are answered, the bad one's error names its own ids only."""
    module = _Vocabulary()
    tf.saved_model.save(module, str(tmp_path / "1"), signatures={"serving_default": module.ids})
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=str(tmp_path), model_name="v", rest_api_port=0,
        batching_parameters=BatchingParameters(max_batch_size=64, batch_timeout_micros=200_000,
                                               num_batch_threads=1)))
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/v:predict"

    def call(ids):
        body = json.dumps({"instances": [ids]}).encode()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    try:
        good = [[11 + i, 50 + i, 80 + i] for i in range(15)]  # ids no other request holds
        requests = good[:7] + [[4242, 1, 2]] + good[7:]
        with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
            answers = list(pool.map(call, requests))
    finally:
        server.shutdown()
    bad = answers.pop(7)
    assert answers == [(200, {"predictions": [sum(ids)]}) for ids in good]
    assert bad[0] == 400 and "4242" in bad[1]["error"]
    quoted = {int(number) for number in re.findall(r"\d+", bad[1]["error"])}
    assert quoted.isdisjoint(id_ for ids in good for id_ in ids), bad[1]["error"]


class _UnbatchedServable:
    """A servable with no batching code: it checks a caller's inputs and makes one call."""

    model_name, version = "plain", 7

    def __init__(self):
        self.recorder = _Recorder(delay=0.05)
        self.checked = []

    def check(self, signature_name, columns):
        self.checked.append(signature_name)
        return {"x": tf.constant(columns["x"])}

    def call(self, signature_name, tensors):
        return model_runner.graph_call(self.recorder, tensors)

    def run(self, signature_name, columns):
        return self.call(signature_name, self.check(signature_name, columns))


def test_batching_wraps_a_servable_as_a_batching_session_wraps_a_session():
    """The servable knows nothing of batching: the wrapper joins the calls of concurrent
    requests, each checked by the servable on its own first, and is otherwise the servable."""
    servable = _UnbatchedServable()
    batched = BatchingServable(servable, BatchingParameters(
        max_batch_size=8, batch_timeout_micros=100_000, num_batch_threads=1))
    inputs = [[[i, i + 1]] for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(len(inputs)) as pool:
        results = list(pool.map(lambda x: batched.run("serving_default", {"x": np.array(x)}),
                                inputs))
    for x, result in zip(inputs, results):
        np.testing.assert_array_equal(result["y"], np.array(x) * 2)
    assert len(servable.recorder.sizes) < len(inputs)  # calls were joined
    assert servable.checked == ["serving_default"] * len(inputs)
    assert (batched.model_name, batched.version) == ("plain", 7)
    assert "batching_parameters" not in inspect.signature(serving.ModelRunner).parameters
