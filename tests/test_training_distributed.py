"""The loop under MirroredStrategy (2 logical CPUs) and MultiWorkerMirroredStrategy (2 processes).

Each runs in fresh subprocesses: logical devices and TF_CONFIG must be set before TF starts.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from albert_tf import checkpoints

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOYS = os.path.join(REPO, "tests", "training_toys.py")


def _env(**extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO, CUDA_VISIBLE_DEVICES="")
    env.update(extra)
    return env


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_mirrored_two_replicas_match_one_device(tmp_path):
    done = subprocess.run([sys.executable, TOYS, "mirrored", str(tmp_path)], env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    results = json.loads(line[len("RESULT "):])
    assert results["default"]["replicas"] == 1 and results["mirrored"]["replicas"] == 2
    for kind in ("variables", "slots"):
        for name, value in results["default"][kind].items():
            np.testing.assert_allclose(results["mirrored"][kind][name], value, rtol=1e-5,
                                       atol=1e-7, err_msg=name)


@pytest.mark.slow
def test_multi_worker_two_processes_write_one_consistent_checkpoint(tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    workers = []
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        workers.append(subprocess.Popen(
            [sys.executable, TOYS, "worker", str(tmp_path)], env=_env(TF_CONFIG=tf_config),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    try:
        for worker in workers:
            outputs.append(worker.communicate(timeout=240))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for worker, (_, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-3000:]
    reports = [json.loads((tmp_path / f"worker{i}.json").read_text()) for i in range(2)]
    assert [r["replicas"] for r in reports] == [2, 2]
    assert [r["step"] for r in reports] == [6, 6]
    # Only the chief (worker 0) wrote, once per save, and both workers hold the same values.
    assert sorted(p.name for p in tmp_path.glob("model.ckpt-*.index")) == [
        "model.ckpt-3.index", "model.ckpt-6.index"]
    assert not list(tmp_path.glob(".*tmp*"))
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-6"))
    assert int(stored["global_step"]) == 6
    for name, value in reports[0]["variables"].items():
        np.testing.assert_array_equal(reports[1]["variables"][name], value, err_msg=name)
        np.testing.assert_allclose(stored[name], value, rtol=0, atol=0, err_msg=name)
    assert {"toy/dense/kernel/adam_m", "output_bias/adam_v"} <= set(stored)
