"""Load test of the built-in REST server (serve.py without tensorflow_model_server) on 127.0.0.1.

  python bench/bench_rest_server.py --clients=64 --requests=50

Exports a small randomly initialised classifier (`ids` signature, seq 64, batch 1 per request),
starts `serve.py --use_model_server=false` (uvicorn + starlette) in a subprocess, and runs N
concurrent clients, one connection per request. Prints the CPU model, connection errors, non-200
answers, p50/p99 latency, requests/s and the server's RSS before and after (a flat RSS means no
per-request leak).
"""

import concurrent.futures
import http.client
import json
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
flags.DEFINE_integer("requests", 50, "Requests per client.")
flags.DEFINE_integer("seq", 64, "Tokens per request.")
FLAGS = flags.FLAGS


def export(root):
    from albert_tf.config import AlbertConfig
    from albert_tf.export import classifier as classifier_export
    from albert_tf.modeling import classifier
    config = AlbertConfig(vocab_size=1000, embedding_size=32, hidden_size=128, num_hidden_layers=4,
                          num_attention_heads=4, intermediate_size=256, max_position_embeddings=128)
    model = classifier.AlbertClassifier(config, 2, skip_padding=True)  # as export.load_classifier
    signatures = classifier_export.ClassifierSignatures(model, ["0", "1"], FLAGS.seq, regression=False)
    return classifier_export.write_saved_model(signatures, root)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv):
    del argv
    root = tempfile.mkdtemp()
    export(os.path.join(root, "export"))
    port = free_port()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    server = subprocess.Popen([sys.executable, "serve.py", f"--export_dir={root}/export", "--model_name=m",
                               f"--rest_api_port={port}", "--use_model_server=false"], cwd=repo,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/v1/models/m")
                break
            except OSError:
                time.sleep(0.2)
        rng = np.random.default_rng(0)
        body = json.dumps({"signature_name": "ids", "inputs": {
            "input_ids": rng.integers(5, 1000, (1, FLAGS.seq)).tolist(),
            "input_mask": [[1] * FLAGS.seq], "segment_ids": [[0] * FLAGS.seq]}}).encode()

        def one():
            start = time.perf_counter()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("POST", "/v1/models/m:predict", body=body)
                response = connection.getresponse()
                response.read()
                connection.close()
                return response.status, time.perf_counter() - start
            except OSError:
                return None, time.perf_counter() - start

        for _ in range(20):
            one()
        rss_before = rss_mb(server.pid)
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(FLAGS.clients) as pool:
            results = list(pool.map(lambda _: one(), range(FLAGS.clients * FLAGS.requests)))
        elapsed = time.perf_counter() - start
        rss_after = rss_mb(server.pid)
        latencies = np.array([t for _, t in results]) * 1000.0
        print(json.dumps({
            "cpu": machine.cpu_model(), "clients": FLAGS.clients, "requests": len(results),
            "connection_errors": sum(status is None for status, _ in results),
            "non_200": sum(status not in (None, 200) for status, _ in results),
            "p50_ms": round(float(np.percentile(latencies, 50)), 1),
            "p99_ms": round(float(np.percentile(latencies, 99)), 1),
            "requests_per_s": round(len(results) / elapsed, 1),
            "rss_mb_before": round(rss_before, 1), "rss_mb_after": round(rss_after, 1)}))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    app.run(main)
