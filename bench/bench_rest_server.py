"""Load test of the built-in TF Serving server (serve.py without tensorflow_model_server) on
127.0.0.1: batching off and on, REST and gRPC, cold and warm, and under 2x CPU overload.

  python bench/bench_rest_server.py --clients=64 --requests=5
  python bench/bench_rest_server.py --protocols=grpc      (gRPC only)

Exports a randomly initialised classifier of the base config (with its TF Serving warm-up
file) and, for each batching setting and protocol, starts a fresh `serve.py
--use_model_server=false` in a subprocess, then measures with N concurrent clients, each
request one short sentence (`ids` signature, --seq tokens, batch 1):
  cold      the first burst of one request per client on the freshly started server
  warm      --requests per client right after
  overload  the same while `os.cpu_count()` busy processes double the CPU demand
First, the ceiling: the same signature called in-process, batch 1 against max_batch_size,
rows/s (no server, no client); batching can gain at most their ratio here. With batching on,
the in-process rate at max_batch_size, num_batch_threads calls at a time (as the server's batch
threads call it), is measured again right before and right after each warm run, and the run
prints its requests/s as a fraction of their mean (`vs_in_process`): on a machine whose speed
drifts from minute to minute only a reference taken beside the run is comparable.
Prints one JSON line per run: connection errors, refusals (503 / UNAVAILABLE / RESOURCE_EXHAUSTED),
other errors, p50/p99 latency and requests/s.
"""

import concurrent.futures
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

flags.DEFINE_integer("clients", 64, "Concurrent clients.")
flags.DEFINE_integer("requests", 5, "Requests per client in the warm and overload runs.")
flags.DEFINE_integer("seq", 12, "Tokens per request (a short sentence).")
flags.DEFINE_string("config", "base_v2", "Published ALBERT config of the benchmarked model.")
flags.DEFINE_list("protocols", ["rest", "grpc"], "rest and/or grpc.")
flags.DEFINE_list("batching", ["off", "on"], "Batching settings to run, off and/or on.")
flags.DEFINE_string("batching_parameters", "max_batch_size { value: 16 } "
                    "batch_timeout_micros { value: 2000 } max_enqueued_batches { value: 8 } "
                    "num_batch_threads { value: 1 }", "The --batching_parameters_file text "
                    "(16 rows: on 2 cores larger batches gave fewer rows/s, bench/RESULTS.md).")
flags.DEFINE_bool("overload", True, "Also run under 2x CPU overload.")
flags.DEFINE_integer("in_process_rounds", 5, "Rounds of the in-process batch 1 against "
                     "max_batch_size measurement (0: skip it).")
FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export(root):
    from albert_tf.config import AlbertConfig
    from albert_tf.export import classifier as classifier_export
    from albert_tf.modeling import classifier, encoder
    config = AlbertConfig.published(FLAGS.config)
    # as export.load_classifier
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config, skip_padding=True), 2)
    signatures = classifier_export.ClassifierSignatures(model, ["0", "1"], 128, regression=False)
    return classifier_export.write_saved_model(signatures, root)


class InProcess:
    """The `ids` signature of the export called directly (no server, no client): the most any
    server can answer on this machine at a given batch size."""

    def __init__(self, export_dir, ids):
        import tensorflow as tf
        self.tf, self.ids = tf, ids
        self.signature = tf.saved_model.load(export_dir).signatures["ids"]
        self.inputs = {}

    def _inputs(self, size):
        if size not in self.inputs:
            tf = self.tf
            self.inputs[size] = {"input_ids": tf.constant(self.ids * size, tf.int32),
                                 "input_mask": tf.ones([size, len(self.ids[0])], tf.int32),
                                 "segment_ids": tf.zeros([size, len(self.ids[0])], tf.int32)}
            self.signature(**self.inputs[size])  # traced and warmed outside the timing
        return self.inputs[size]

    def rows_per_second(self, sizes, rounds, rows, threads=1):
        """{size: rows/s} over `rounds` round-robin rounds of `rows` rows per size (median),
        the calls made by `threads` callers at once (as many as the server's batch threads)."""
        seconds = {size: [] for size in sizes}
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for _ in range(rounds):
                for size in sizes:
                    inputs, calls = self._inputs(size), max(threads, rows // size)
                    started = time.perf_counter()
                    list(pool.map(lambda _, inputs=inputs: self.signature(**inputs), range(calls)))
                    seconds[size].append((time.perf_counter() - started) / (calls * size))
        return {size: round(1 / float(np.median(per_row)), 1) for size, per_row in seconds.items()}


def ceiling(in_process, parameters):
    """In-process rows/s at max_batch_size with num_batch_threads callers, about as many rows as
    a warm run answers: the server's batched rate at its best."""
    size = parameters.max_batch_size
    return in_process.rows_per_second((size,), 1, FLAGS.clients * FLAGS.requests,
                                      parameters.num_batch_threads)[size]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(export_dir, batching_file):
    rest_port, grpc_port = free_port(), free_port()
    command = [sys.executable, "serve.py", f"--model_base_path={export_dir}", "--model_name=m",
               f"--rest_api_port={rest_port}", f"--port={grpc_port}", "--use_model_server=false"]
    if batching_file:
        command += ["--enable_batching", f"--batching_parameters_file={batching_file}"]
    started = time.perf_counter()
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"serve.py exited with {server.returncode}: {command}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=2)
            connection.request("GET", "/v1/models/m")
            if connection.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.2)
    return server, rest_port, grpc_port, time.perf_counter() - started


class RestClient:
    def __init__(self, port, ids):
        self.port = port
        self.body = json.dumps({"signature_name": "ids", "inputs": {
            "input_ids": ids, "input_mask": [[1] * len(ids[0])],
            "segment_ids": [[0] * len(ids[0])]}}).encode()
        self.connection = None

    def call(self):
        """'ok', 'refused' (503), 'error' (other status) or 'connection' (no answer)."""
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.connection.request("POST", "/v1/models/m:predict", body=self.body)
            response = self.connection.getresponse()
            response.read()
            if response.getheader("connection", "").lower() == "close":
                self.connection.close()
                self.connection = None
            return {200: "ok", 503: "refused"}.get(response.status, "error")
        except OSError:
            self.connection = None
            return "connection"


class GrpcClient:
    def __init__(self, port, ids):
        import grpc
        import tensorflow as tf
        from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
        self.grpc = grpc
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(
            grpc.insecure_channel(f"127.0.0.1:{port}"))
        self.request = predict_pb2.PredictRequest()
        self.request.model_spec.name, self.request.model_spec.signature_name = "m", "ids"
        array = np.array(ids, np.int32)
        for name, value in (("input_ids", array), ("input_mask", np.ones_like(array)),
                            ("segment_ids", np.zeros_like(array))):
            self.request.inputs[name].CopyFrom(tf.make_tensor_proto(value))

    def call(self):
        try:
            self.stub.Predict(self.request, timeout=120)
            return "ok"
        except self.grpc.RpcError as error:
            code = error.code()
            if code in (self.grpc.StatusCode.UNAVAILABLE, self.grpc.StatusCode.RESOURCE_EXHAUSTED):
                return "refused"
            return "error"


def burst(clients, per_client):
    """Each client's calls in its own thread; (outcome, seconds) of every call and wall time."""
    def run(client):
        results = []
        for _ in range(per_client):
            start = time.perf_counter()
            outcome = client.call()
            results.append((outcome, time.perf_counter() - start))
        return results
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
        results = [item for chunk in pool.map(run, clients) for item in chunk]
    return results, time.perf_counter() - start


def summary(results, elapsed):
    latencies = np.array([seconds for outcome, seconds in results if outcome == "ok"]) * 1000.0
    counts = {outcome: sum(o == outcome for o, _ in results)
              for outcome in ("ok", "refused", "error", "connection")}
    return {"requests": len(results), "answered_ok": counts["ok"], "refused": counts["refused"],
            "other_errors": counts["error"], "connection_errors": counts["connection"],
            "p50_ms": round(float(np.percentile(latencies, 50)), 1) if len(latencies) else None,
            "p99_ms": round(float(np.percentile(latencies, 99)), 1) if len(latencies) else None,
            "requests_per_s": round(counts["ok"] / elapsed, 1)}


def _spin(stop):
    while not stop.is_set():
        pass


def main(argv):
    del argv
    with tempfile.TemporaryDirectory(prefix="bench_rest_server_") as root:
        _measure(root)


def _measure(root):
    """Exports the model under `root` and prints one JSON line per (batching, protocol, phase)."""
    version = export(os.path.join(root, "export"))
    batching_file = os.path.join(root, "batching.txt")
    with open(batching_file, "w", encoding="utf-8") as writer:
        writer.write(FLAGS.batching_parameters)
    ids = [[2] + list(np.random.default_rng(0).integers(5, 1000, FLAGS.seq - 2)) + [3]]
    ids = [[int(value) for value in ids[0]]]
    print(json.dumps({"cpu": machine.cpu_model(), "cores": os.cpu_count(),
                      "config": FLAGS.config, "clients": FLAGS.clients, "seq": FLAGS.seq,
                      "batching_parameters": FLAGS.batching_parameters}), flush=True)
    from albert_tf.serving.batching import BatchingParameters
    parameters = BatchingParameters.parse(FLAGS.batching_parameters, "--batching_parameters")
    batch_size = parameters.max_batch_size
    in_process = InProcess(version, ids) if FLAGS.in_process_rounds else None
    if in_process:
        rows_per_second = in_process.rows_per_second((1, batch_size), FLAGS.in_process_rounds,
                                                     batch_size)
        print(json.dumps({"in_process_rows_per_s": rows_per_second,
                          "batching_gain_ceiling": round(
                              rows_per_second[batch_size] / rows_per_second[1], 2)}), flush=True)
    runs_done = {}
    for batching in FLAGS.batching:
        for protocol in FLAGS.protocols:
            server, rest_port, grpc_port, startup = start_server(
                os.path.join(root, "export"), batching_file if batching == "on" else None)
            try:
                client_type = RestClient if protocol == "rest" else GrpcClient
                port = rest_port if protocol == "rest" else grpc_port
                clients = [client_type(port, ids) for _ in range(FLAGS.clients)]
                runs = [("cold", 1), ("warm", FLAGS.requests)]
                if FLAGS.overload:
                    runs.append(("overload", FLAGS.requests))
                for phase, per_client in runs:
                    stop, spinners = multiprocessing.Event(), []
                    if phase == "overload":
                        spinners = [multiprocessing.Process(target=_spin, args=(stop,))
                                    for _ in range(os.cpu_count())]
                        for spinner in spinners:
                            spinner.start()
                    beside = in_process and batching == "on" and phase == "warm"
                    reference = [ceiling(in_process, parameters)] if beside else []
                    try:
                        results, elapsed = burst(clients, per_client)
                    finally:
                        stop.set()
                        for spinner in spinners:
                            spinner.join()
                    row = {"batching": batching, "protocol": protocol, "phase": phase,
                           "server_start_s": round(startup, 1), **summary(results, elapsed)}
                    if beside:
                        reference.append(ceiling(in_process, parameters))
                        row["in_process_rows_per_s"] = round(float(np.mean(reference)), 1)
                        row["vs_in_process"] = round(row["requests_per_s"]
                                                     / row["in_process_rows_per_s"], 2)
                    print(json.dumps(row), flush=True)
                    runs_done[(batching, protocol, phase)] = row
            finally:
                server.terminate()
                server.wait(timeout=60)
    print("written:", machine.write_results(
        "rest_server", f"built-in server, {FLAGS.config} config, {FLAGS.clients} clients, batching "
        f"{'/'.join(FLAGS.batching)}, {' and '.join(FLAGS.protocols)}", results_table(runs_done),
        lambda entry: entry["name"] == "batching on" and entry["what"].endswith(" warm"),
        {name: FLAGS[name].value for name in ("clients", "requests", "seq", "config", "protocols",
                                               "batching", "batching_parameters", "overload")}))


def results_table(runs_done):
    """Each run's requests/s, against batching off in the same protocol and phase where both ran."""
    table = []
    for (batching, protocol, phase), run in runs_done.items():
        off = runs_done.get(("off", protocol, phase))
        reference = ("batching off", off["requests_per_s"]) if off and batching == "on" else (None, None)
        table.append(machine.row(
            f"{protocol} {phase}", f"batching {batching}", run["requests_per_s"], "requests/s", *reference,
            f"p50 {run['p50_ms']} ms, p99 {run['p99_ms']} ms, {run['connection_errors']} connection errors"))
    return table


if __name__ == "__main__":
    app.run(main)
