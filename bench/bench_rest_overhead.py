"""CPU cost of the built-in server's REST request handling, in-process (no HTTP, no client):
the JSON body parsed, turned into the request core's protos, run on a tiny SavedModel and
written back as JSON (`RestApp._post`). The model is tiny so that the handling, not the
model, is what is timed. Prints one JSON line per request shape: CPU microseconds per request,
the minimum over --rounds rounds (CPU time, so that other jobs on the machine disturb it less).

  python bench/bench_rest_overhead.py                    # this checkout's code
  python bench/bench_rest_overhead.py --reference_repo=/other/checkout

With --reference_repo the same cases are first timed on that checkout's code (in a subprocess,
same invocation) and each line adds `ratio_to_reference` (below 1: this checkout is cheaper).
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
WRITE_RESULTS = flags.DEFINE_bool("write_results", True, "Write bench/results/rest_overhead.json "
                                  "(off in the reference's subprocess).")


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


def _reference():
    """{case: CPU µs per request} of --reference_repo, timed by this script in a subprocess."""
    command = [sys.executable, os.path.abspath(__file__), f"--repo={REFERENCE_REPO.value}",
               f"--rounds={ROUNDS.value}", f"--round_secs={ROUND_SECS.value}", "--nowrite_results"]
    lines = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
    return {row["case"]: row["cpu_us_per_request"] for row in rows if "case" in row}


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


def main(argv):
    del argv
    reference = _reference() if REFERENCE_REPO.value else {}
    sys.path.insert(0, REPO.value)
    from albert_tf.serving import metrics, rest_app

    print(json.dumps({"machine": machine.describe(), "repo": REPO.value}))
    with tempfile.TemporaryDirectory() as base:
        _write_model(base)
        handler = rest_app.RestApp(_served(base), metrics.RequestMetrics())
        table = []
        for name, (verb, document) in CASES.items():
            body = json.dumps(document).encode()
            route = rest_app.Route("POST", f"/v1/models/m:{verb}")
            for _ in range(20):  # warm-up
                handler._post(route, body)
            per_request = []
            for _ in range(ROUNDS.value):
                count, started = 0, time.process_time()
                while time.process_time() - started < ROUND_SECS.value:
                    handler._post(route, body)
                    count += 1
                per_request.append((time.process_time() - started) / count * 1e6)
            row = {"case": name, "cpu_us_per_request": round(min(per_request), 1)}
            if name in reference:
                row.update(reference_cpu_us_per_request=reference[name],
                           ratio_to_reference=round(min(per_request) / reference[name], 2))
            print(json.dumps(row))
            table.append(machine.row("CPU per request", name, min(per_request), "µs",
                                     *(("the reference checkout", reference[name]) if name in reference
                                       else (None, None))))
    if WRITE_RESULTS.value:
        print("written:", machine.write_results(
            "rest_overhead", "the built-in server's REST request handling in-process (JSON in, tiny "
            f"model, JSON out), CPU time, the fastest of {ROUNDS.value} rounds", table, lambda entry: True,
            {"rounds": ROUNDS.value, "round_secs": ROUND_SECS.value, "reference": bool(reference)}))


if __name__ == "__main__":
    app.run(main)
