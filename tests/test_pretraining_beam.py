"""create_pretraining_data on Apache Beam (the DirectRunner, multi-processing, 2 workers; the
DaskRunner on a dask.distributed cluster of 2 worker processes) gives
the local run's files byte for byte in both output modes and the same summary statistics; a
failing input file is named; a killed pipeline leaves no file under an output name; the runner
flags are checked like every other flag.

The second implementation here is the local path (`--runner=local`, its own worker pool), built
once per module: Beam's multi-processing start-up costs seconds per run.
"""

import json
import os
import subprocess
import sys

from absl import flags
from dask.distributed import Client, LocalCluster, get_task_stream
import pytest

from albert_tf import errors
from albert_tf.pretraining import create_data
from albert_tf.pretraining import options as options_lib
from albert_tf.scripts import create_pretraining_data as script
from tests import killed_runs
from tests.conftest import script_env

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEAM_OPTIONS = "--direct_num_workers=2 --direct_running_mode=multi_processing"
# Timing and who ran it differ by design; every statistic must not.
RUN_KEYS = ("runner", "num_workers", "elapsed_seconds", "cpu_seconds", "instances_per_second")


@pytest.fixture(scope="module")
def inputs(real_data, tmp_path_factory):
    """Four real-text files of different sizes: three Brown shards' starts and Botchan's."""
    directory = tmp_path_factory.mktemp("beam_inputs")
    sources = [(path, 300 + 150 * i) for i, path in enumerate(real_data["brown"][:3])]
    sources.append((real_data["botchan"], 500))
    paths = []
    for i, (source, num_lines) in enumerate(sources):
        with open(source, encoding="utf-8") as handle:
            lines = handle.read().split("\n")[:num_lines]
        path = directory / f"text-{i}.txt"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def options(spm_model_file):
    return options_lib.DataOptions(spm_model_file=spm_model_file, max_seq_length=64,
                                   max_predictions_per_seq=10, dupe_factor=2,
                                   shuffle_buffer_size=50)


def _outputs(kind, directory):
    """--output_file for one output per input file, or round-robin over three files."""
    if kind == "per_input":
        return str(directory / "train.tfrecord")
    return ",".join(str(directory / f"rr-{i}.tfrecord") for i in range(3))


@pytest.fixture(scope="module")
def local_runs(inputs, options, tmp_path_factory):
    """{output mode: (output directory, summary)} of the local path with 2 workers."""
    runs = {}
    for kind in ("per_input", "round_robin"):
        directory = tmp_path_factory.mktemp(f"local_{kind}")
        summary = create_data.create_pretraining_data(
            ",".join(inputs), _outputs(kind, directory), options, num_workers=2)
        runs[kind] = directory, summary
    return runs


def _files(directory):
    """{name: bytes} of every file (hidden ones too), summaries aside."""
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))
            if not name.endswith(".summary.json")}


def _statistics(summary):
    return {key: value for key, value in summary.items() if key not in RUN_KEYS}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["per_input", "round_robin"])
def test_beam_gives_the_local_files_byte_for_byte(kind, inputs, options, local_runs, tmp_path):
    local_dir, local_summary = local_runs[kind]
    summary = create_data.create_pretraining_data(
        ",".join(inputs), _outputs(kind, tmp_path), options, runner="DirectRunner",
        beam_options=BEAM_OPTIONS)
    expected = _files(local_dir)
    assert len(expected) == (4 if kind == "per_input" else 3)
    assert all(expected.values())
    assert _files(tmp_path) == expected  # Same names, same bytes, no temporaries left.
    assert _statistics(summary) == _statistics(local_summary)
    assert summary["runner"] == "DirectRunner" and summary["num_workers"] is None
    first_output = _outputs(kind, tmp_path).split(",")[0]
    with open(first_output + ".summary.json", encoding="utf-8") as reader:
        assert json.load(reader) == summary


@pytest.mark.slow
def test_a_failing_input_file_is_named_and_nothing_is_written(inputs, options, tmp_path):
    blank = tmp_path / "zz-blank.txt"
    blank.write_bytes(b"\n \n")
    corpus = ",".join(inputs[:2] + [str(blank)])
    with pytest.raises(errors.UserInputError) as local_error:
        create_data.create_pretraining_data(corpus, str(tmp_path / "local" / "x"), options,
                                            num_workers=1)
    # The DirectRunner in its default (in-process) mode keeps this test fast; the file is found
    # in the runner's error text as with any runner.
    with pytest.raises(errors.UserInputError) as beam_error:
        create_data.create_pretraining_data(corpus, str(tmp_path / "beam" / "x"), options,
                                            runner="DirectRunner")
    assert str(beam_error.value) == str(local_error.value)
    assert str(beam_error.value).startswith(f"{blank}: input file contains no text")
    # The two good files' temporaries were removed too: nothing at all is left.
    assert os.listdir(tmp_path / "beam") == []


@pytest.mark.slow
def test_a_killed_pipeline_leaves_no_output_file(real_data, spm_model_file, tmp_path):
    out_dir = tmp_path / "killed"
    command = [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"),
               f"--input_file={','.join(real_data['brown'][:4])}",
               f"--output_file={out_dir}/train", f"--spm_model_file={spm_model_file}",
               "--dupe_factor=20", "--max_seq_length=128", "--shuffle_buffer_size=10",
               "--runner=DirectRunner", f"--beam_options={BEAM_OPTIONS}"]
    # cwd outside the checkout: the Beam workers must still import albert_tf. The kill reaches
    # them too: they are in the run's process group.
    killed_runs.kill_while_writing(command, out_dir, cwd=tmp_path,
                                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=180)
    names = os.listdir(out_dir)
    assert any(".tmp-" in name for name in names)
    assert [name for name in names if not name.startswith(".")] == []


@pytest.mark.parametrize("extra, message", [
    (["--beam_options=--direct_num_workers=2"],
     r"--beam_options='--direct_num_workers=2' needs a Beam --runner"),
    (["--runner=DirectRunner", "--num_workers=2"],
     r"--num_workers=2 is for --runner=local; on --runner=DirectRunner"),
    (["--runner=NoSuchRunner"], r"--runner=NoSuchRunner: not a Beam runner"),
    (["--runner=DirectRunner", "--beam_options=--direct_num_wrkers=2"],
     r"unknown Beam option\(s\) --direct_num_wrkers"),
    (["--runner=DirectRunner", "--beam_options=--runner=DataflowRunner"],
     r"give the runner with --runner, not inside --beam_options"),
    (["--runner=DirectRunner", "--beam_options='unclosed"], r"No closing quotation"),
])
def test_runner_flags_are_checked(extra, message, inputs, spm_model_file, tmp_path):
    flag_values = flags.FlagValues()
    script.define_flags(flag_values)
    flag_values(["create_pretraining_data.py", f"--input_file={inputs[0]}",
                 f"--output_file={tmp_path / 'out' / 'x'}", f"--spm_model_file={spm_model_file}",
                 *extra])
    with pytest.raises(errors.UserInputError, match=message):
        script.run(flag_values)
    assert not (tmp_path / "out").exists() or [
        name for name in os.listdir(tmp_path / "out") if not name.startswith(".")] == []


@pytest.fixture(scope="module")
def dask_cluster():
    """A dask.distributed scheduler with two worker processes (one thread each) on this
    machine: what `dask worker tcp://...:8786` processes on other machines would be."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        yield cluster


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["per_input", "round_robin"])
def test_dask_runner_on_a_cluster_gives_the_local_files_byte_for_byte(
        kind, inputs, spm_model_file, local_runs, dask_cluster, tmp_path):
    """`--runner=DaskRunner --beam_options=--dask_client_address=<scheduler>`: both workers run
    the pipeline's tasks and the files are the local run's."""
    local_dir, local_summary = local_runs[kind]
    flag_values = flags.FlagValues()
    script.define_flags(flag_values)
    flag_values(["create_pretraining_data.py", f"--input_file={','.join(inputs)}",
                 f"--output_file={_outputs(kind, tmp_path)}", f"--spm_model_file={spm_model_file}",
                 "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2",
                 "--shuffle_buffer_size=50", "--runner=DaskRunner",
                 f"--beam_options=--dask_client_address={dask_cluster.scheduler_address}"])
    with Client(dask_cluster.scheduler_address) as client, get_task_stream(client) as tasks:
        script.run(flag_values)
        workers = set(client.scheduler_info()["workers"])
    assert len(workers) == 2 and {task["worker"] for task in tasks.data} == workers
    assert _files(tmp_path) == _files(local_dir)  # Same names, same bytes, no temporaries.
    first_output = _outputs(kind, tmp_path).split(",")[0]
    with open(first_output + ".summary.json", encoding="utf-8") as reader:
        summary = json.load(reader)
    assert _statistics(summary) == _statistics(local_summary)
    assert summary["runner"] == "DaskRunner"


@pytest.mark.slow
def test_dask_runner_names_a_failing_input_file_and_writes_nothing(inputs, options,
                                                                  dask_cluster, tmp_path):
    blank = tmp_path / "zz-blank.txt"
    blank.write_bytes(b"\n \n")
    with pytest.raises(errors.UserInputError) as error:
        create_data.create_pretraining_data(
            ",".join(inputs[:1] + [str(blank)]), str(tmp_path / "out" / "x"), options,
            runner="DaskRunner",
            beam_options=f"--dask_client_address={dask_cluster.scheduler_address}")
    assert str(error.value).startswith(f"{blank}: input file contains no text")
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.slow
def test_the_direct_runner_downloads_nothing_and_logs_only_the_pipeline_s_lines(
        inputs, spm_model_file, tmp_path):
    """Beam 2.77's DirectRunner first downloads the Prism runner (offline: a failed fetch, then
    a fallback); --runner=DirectRunner must attempt no download, and Beam's harness lines (state
    cache, worker pool, missing Google Cloud clients) stay out of the default log."""
    command = [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"),
               f"--input_file={inputs[0]}", f"--output_file={tmp_path}/train",
               f"--spm_model_file={spm_model_file}", "--dupe_factor=1", "--max_seq_length=64",
               "--max_predictions_per_seq=10", "--runner=DirectRunner"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env=script_env())
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    for noise in ("prism", "Downloading", "Falling back", "apitools", "statecache",
                  "worker_pool"):
        assert noise.lower() not in log.lower(), log
    python_lines = [line for line in log.splitlines() if ".py:" in line]  # absl's format
    assert python_lines and all("create_data.py" in line or "beam_pipeline.py" in line
                                for line in python_lines), log
    assert os.path.getsize(f"{tmp_path}/train") > 0
