"""CPU cost of the built-in server's REST request handling, in-process (no HTTP, no client):
the JSON body parsed, turned into the request core's protos, run on a tiny SavedModel and
written back as JSON (`RestApp._post`). The model is tiny so that the handling, not the
model, is what is timed. Prints one JSON line per request shape: CPU microseconds per request,
the minimum over --rounds rounds (CPU time, so that other jobs on the machine disturb it less).

  python bench/bench_rest_overhead.py                    # this checkout's code
  python bench/bench_rest_overhead.py --reference_repo=/other/checkout --write_results

With --reference_repo each checkout's code runs in a worker process of its own, and the rounds
alternate between them (round-robin, the order swapped every round), so a change in the
machine's load falls on both; each line adds `ratio_to_reference` (below 1: this checkout is
cheaper). The table goes to bench/results/rest_overhead.json, or with --reference_repo to
rest_request_cost.json (--nowrite_results: printed only).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

REPO = flags.DEFINE_string("repo", os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "Checkout whose albert_tf is timed.")
REFERENCE_REPO = flags.DEFINE_string("reference_repo", None,
                                     "Checkout timed first, as the reference (None: no reference).")
ROUNDS = flags.DEFINE_integer("rounds", 7, "Rounds per request shape; the fastest is reported.")
ROUND_SECS = flags.DEFINE_float("round_secs", 0.4, "CPU seconds per round.")
WORKER = flags.DEFINE_bool("worker", False, "Internal: time one round of the case named on "
                           "each line of stdin, answering CPU µs per request on stdout.")
WRITE_RESULTS = flags.DEFINE_bool("write_results", True, "Write bench/results/rest_overhead.json "
                                  "(alone) or rest_request_cost.json (with --reference_repo).")


def _write_model(base):
    import tensorflow as tf
    from albert_tf.export import signature_methods

    class Tiny(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def predict(self, x):
            return {"y": 0.5 * x + 3.0}

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")])
        def ids(self, ids):
            return {"total": tf.reduce_sum(ids, axis=1), "first": ids[:, 0]}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs):
            x = tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"]
            return {"scores": tf.concat([x, -x], axis=1),
                    "classes": tf.tile(tf.constant([["pos", "neg"]]), [tf.shape(x)[0], 1])}

    model, path = Tiny(), os.path.join(base, "1")
    tf.saved_model.save(model, path, signatures={"serving_default": model.predict,
                                                 "ids": model.ids, "classify": model.classify})
    signature_methods.set_method_names(path, {"classify": signature_methods.CLASSIFY})


CASES = {
    "predict row, 1 x 12 int32": ("predict", {"signature_name": "ids", "instances": [[1] * 12]}),
    "predict columnar, 64 x 128 int32": (
        "predict", {"signature_name": "ids", "inputs": {"ids": [[1] * 128] * 64}}),
    "predict row, 1000 float32": ("predict", {"instances": [i / 1000 for i in range(1000)]}),
    "classify, 32 examples": (
        "classify", {"signature_name": "classify", "examples": [{"x": i / 7} for i in range(32)]}),
}


def _start_worker(repo):
    """A worker process timing rounds on `repo`'s code; returns once it has warmed up."""
    worker = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--worker", f"--repo={repo}",
         f"--round_secs={ROUND_SECS.value}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    while (line := worker.stdout.readline()) and not line.startswith("ready"):
        pass
    if not line:
        raise RuntimeError(f"the worker on {repo} ended before it was ready")
    return worker


def _round(worker, case):
    worker.stdin.write(case + "\n")
    return float(worker.stdout.readline())


def _timed_round(handler, route, body):
    count, started = 0, time.process_time()
    while time.process_time() - started < ROUND_SECS.value:
        handler._post(route, body)
        count += 1
    return (time.process_time() - started) / count * 1e6


def _served(base):
    """What `RestApp` serves: this checkout's server core, or the `ServedVersions` of a
    reference checkout from before the server core (no rescans in either)."""
    try:
        from albert_tf.serving import server, server_core
    except ImportError:
        from albert_tf.serving import versions
        return versions.ServedVersions(base, "m")
    return server_core.ServerCore(server.ServerOptions(
        model_base_path=base, model_name="m", file_system_poll_wait_seconds=3600))


def _work(handler):
    """--worker: one round of the case named on each line of stdin."""
    prepared = {name: (rest_route(verb), json.dumps(document).encode())
                for name, (verb, document) in CASES.items()}
    for route, body in prepared.values():
        for _ in range(20):  # warm-up
            handler._post(route, body)
    print("ready", flush=True)
    for line in sys.stdin:
        print(_timed_round(handler, *prepared[line.strip()]), flush=True)


def rest_route(verb):
    from albert_tf.serving import rest_app
    return rest_app.Route("POST", f"/v1/models/m:{verb}")


def _round_robin():
    """{label: {case: [CPU µs per request of each round]}}, this checkout and the reference
    timed in alternation."""
    workers = {"this": _start_worker(REPO.value),
               "reference": _start_worker(REFERENCE_REPO.value)}
    rounds = {label: {name: [] for name in CASES} for label in workers}
    try:
        for index in range(ROUNDS.value):
            order = list(workers) if index % 2 == 0 else list(workers)[::-1]
            for name in CASES:
                for label in order:
                    rounds[label][name].append(_round(workers[label], name))
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait(60)
    return rounds


def main(argv):
    del argv
    sys.path.insert(0, REPO.value)
    from albert_tf.serving import metrics, rest_app
    if WORKER.value:
        with tempfile.TemporaryDirectory() as base:
            _write_model(base)
            _work(rest_app.RestApp(_served(base), metrics.RequestMetrics()))
        return
    print(json.dumps({"machine": machine.describe(), "repo": REPO.value}))
    if not REFERENCE_REPO.value:
        table = []
        with tempfile.TemporaryDirectory() as base:
            _write_model(base)
            handler = rest_app.RestApp(_served(base), metrics.RequestMetrics())
            for name, (verb, document) in CASES.items():
                route, body = rest_route(verb), json.dumps(document).encode()
                for _ in range(20):  # warm-up
                    handler._post(route, body)
                best = min(_timed_round(handler, route, body) for _ in range(ROUNDS.value))
                print(json.dumps({"case": name, "cpu_us_per_request": round(best, 1)}))
                table.append(machine.row("CPU per request", name, best, "µs"))
        _write(table, "rest_overhead", "the built-in server's REST request handling in-process "
               "(JSON in, tiny model, JSON out), CPU time", lambda entry: True)
        return
    rounds = _round_robin()
    table = []
    for name in CASES:
        this, reference = min(rounds["this"][name]), min(rounds["reference"][name])
        print(json.dumps({"case": name, "cpu_us_per_request": round(this, 1),
                          "reference_cpu_us_per_request": round(reference, 1),
                          "ratio_to_reference": round(this / reference, 2)}))
        table.append(machine.row("CPU per request", name, this, "µs", "the reference checkout",
                                 reference))
    _write(table, "rest_request_cost", "built-in server's REST request handling, this checkout "
           "against --reference_repo, round-robin", lambda entry: True, rounds)


def _write(table, name, workload, headline, rounds=None):
    """bench/results/<name>.json with the fastest round of each case (and every round's cost)."""
    if WRITE_RESULTS.value:
        print("written:", machine.write_results(
            name, f"{workload}, the fastest of {ROUNDS.value} rounds", table, headline,
            {"rounds": ROUNDS.value, "round_secs": ROUND_SECS.value, "per_round": rounds}))

if __name__ == "__main__":
    app.run(main)
