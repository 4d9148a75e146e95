"""Every maintained benchmark writes the results file bench/RESULTS.md renders: its figure is
built from its own table by bench/machine.py (one builder for all), with the keys `make docs`
reads; bench/ holds nothing else (bench/run_all.py lists what each script writes)."""

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from albert_tf.demo import docs_results
from tests.conftest import REPO_ROOT

BENCH = os.path.join(REPO_ROOT, "bench")
KEYS_DOCS_READ = {"workload", "figure", "command", "cpu", "isa", "load", "date"}


def _load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def machine():
    return _load("machine")


@pytest.fixture(scope="module")
def run_all():
    return _load("run_all")


def _scripts(run_all):
    return {**{script: names for script, names in run_all.MAINTAINED.items()},
            **{script: (name,) for script, (name, _) in run_all.NEEDS_INPUTS.items()}}


def test_bench_holds_the_maintained_scripts_and_their_library_only(run_all):
    files = {name for name in os.listdir(BENCH) if name.endswith(".py")}
    assert files == set(_scripts(run_all)) | {"machine.py", "run_all.py"}


def test_every_maintained_script_writes_its_results_files_through_machine_write_results(run_all):
    for script, names in _scripts(run_all).items():
        with open(os.path.join(BENCH, script), encoding="utf-8") as reader:
            tree = ast.parse(reader.read())
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "write_results"
                 and isinstance(node.func.value, ast.Name) and node.func.value.id == "machine"]
        assert calls, f"bench/{script} never calls machine.write_results"
        assert all(len(call.args) + len(call.keywords) >= 4 for call in calls), (
            f"bench/{script}: write_results without a table and its headline rows")
        strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
        for name in names:
            assert name in strings, f"bench/{script} does not name its results file {name!r}"


def test_the_figure_is_built_from_the_table_and_written_with_the_keys_make_docs_reads(
        machine, tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "LOAD_BEFORE", 0.1)
    table = [machine.row("fine-tuning", "ours, float32", 30.0, "examples/s", "HF's", 12.0, "MFU 9%"),
             machine.row("fine-tuning", "ours, bfloat16", 36.0, "examples/s", "HF's", 12.0),
             machine.row("fine-tuning", "HF", 12.0, "examples/s"),
             machine.row("serving", "ours", 1234.5, "ms")]
    path = machine.write_results("toy", "a workload", table, lambda entry: entry["name"] != "HF",
                                 {"steps": 2}, results_dir=str(tmp_path))
    with open(path, encoding="utf-8") as reader:
        written = json.load(reader)
    assert KEYS_DOCS_READ <= set(written)
    assert written["figure"] == ("fine-tuning: ours, float32 30.0 examples/s = 2.50× HF's (MFU 9%), "
                                 "ours, bfloat16 36.0 examples/s = 3.00× HF's; serving: ours 1,234 ms")
    assert written["details"]["table"][0]["ratio"] == 2.5
    assert written["load"].startswith("0.10 before the run")
    monkeypatch.setattr(docs_results, "BENCH", str(tmp_path))
    assert f"| a workload | {written['figure']} |" in docs_results.render_bench_current("")


def test_a_busy_machine_is_named_in_the_figure_and_a_table_without_headline_rows_is_refused(
        machine, tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "LOAD_BEFORE", 9.0)
    table = [machine.row("step", "ours", 0.5, "s", "before", 1.0)]
    path = machine.write_results("busy", "w", table, lambda entry: True, results_dir=str(tmp_path))
    with open(path, encoding="utf-8") as reader:
        assert json.load(reader)["figure"].endswith("other jobs on the machine (load 9.0 before the run): noisy")
    with pytest.raises(ValueError, match="no row of the table is a headline row"):
        machine.write_results("none", "w", table, lambda entry: False, results_dir=str(tmp_path))
    assert not os.path.exists(os.path.join(tmp_path, "none.json"))


# In a process of its own: the scripts define absl flags that other modules may define too.
_TABLES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_rest_server, keras_fit
run = {"requests_per_s": 20.0, "p50_ms": 900.0, "p99_ms": 1500.0, "connection_errors": 0}
print(json.dumps([bench_rest_server.results_table({("off", "rest", "warm"): dict(run, requests_per_s=10.0),
                                                   ("on", "rest", "warm"): run, ("on", "grpc", "warm"): run}),
                  keras_fit.results_table({"cpu": {"keras_fit": [0.002, 0.006, 0.004],
                                                   "run_classifier": [0.004, 0.004, 0.004]}})]))
"""


def test_the_rest_server_and_keras_fit_tables_compare_like_with_like():
    result = subprocess.run([sys.executable, "-c", _TABLES, BENCH], check=True, capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    rest_server, rounds = json.loads(result.stdout)
    assert [entry.get("ratio") for entry in rest_server] == [None, 2.0, None]  # no gRPC batching-off run
    assert rest_server[1]["note"] == "p50 900.0 ms, p99 1500.0 ms, 0 connection errors"
    assert [round(entry["ratio"], 2) for entry in rounds] == [0.5, 1.5, 1.0, 1.0]
    assert rounds[-1]["note"] == "ratio per round 1.00, 0.50–1.50"
    assert rounds[-1]["what"] == "cpu time, median of 3 rounds"


@pytest.mark.slow
def test_the_tfrecord_check_benchmark_writes_its_file_in_a_tiny_real_run(tmp_path):
    env = dict(os.environ, ALBERT_TF_BENCH_RESULTS_DIR=str(tmp_path), PYTHONPATH=REPO_ROOT)
    subprocess.run([sys.executable, os.path.join(BENCH, "bench_tfrecord_check.py"), "--records=200",
                    "--repeats=1"], check=True, env=env, capture_output=True, cwd=REPO_ROOT)
    with open(os.path.join(tmp_path, "tfrecord_check.json"), encoding="utf-8") as reader:
        written = json.load(reader)
    assert KEYS_DOCS_READ <= set(written) and written["details"]["settings"]["records"] == 200
    assert written["figure"].startswith("seconds for the whole file: start-up check ")


def test_rerunning_a_transcribed_rows_command_writes_that_rows_file(run_all):
    """bench/RESULTS.md: to replace a transcribed row, rerun its command; its script then writes
    the file the row renders from."""
    scripts = _scripts(run_all)
    for path in sorted(os.listdir(os.path.join(BENCH, "results"))):
        with open(os.path.join(BENCH, "results", path), encoding="utf-8") as reader:
            result = json.load(reader)
        script = re.search(r"bench/(\w+\.py)", result["command"])
        if "provenance" not in result or not script:
            continue  # measured by its script, or by a command that is no script of bench/
        named = re.search(r"--serving_results=(\w+)", result["command"])  # the file a flag names
        assert path[:-len(".json")] in scripts.get(script.group(1), ()) + ((named.group(1),) if named else ()), (
            f"bench/results/{path}: its command runs bench/{script.group(1)}, which does not write it")
