"""The gRPC twin of bench_rest_server.py: the same runs through TF Serving's
`PredictionServiceStub` only.

  python bench/bench_grpc_server.py --clients=64 --requests=5
"""

import os
import sys

from absl import app

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rest_server  # noqa: E402  bench/: the script's own directory is on sys.path

if __name__ == "__main__":
    bench_rest_server.FLAGS.set_default("protocols", ["grpc"])
    app.run(bench_rest_server.main)
