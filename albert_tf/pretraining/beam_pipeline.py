"""create_pretraining_data.py as an Apache Beam pipeline: the local run's files, byte for byte,
on any Beam runner (the DirectRunner and the DaskRunner on a dask.distributed cluster here;
Dataflow, Flink or Spark at scale).

Stages:
1. the (file_index, path) tasks, reshuffled so that the runner spreads them over its workers;
2. per input file, `producer.produce` (the same deterministic stream a local worker makes)
   written straight to a hidden temporary file beside the outputs through tf.io.gfile (local
   paths, gs://, hdfs://). It emits the file's statistics, never its records, so no instance
   goes through the runner's shuffle, and counts them in Beam metrics;
3. the results combined into one list (`beam.combiners.ToList`) and one finishing step:
   per-input temporaries renamed onto the output names, or the round-robin merge of the parts
   (`outputs.merge_round_robin`, the local code), then the run summary (`summary.build`).
Nothing appears under an output name before stage 3: a failed or killed pipeline leaves only
hidden `.*.tmp-*` files, which the next run on the same outputs removes.
"""

import contextlib
import dataclasses
import json
import os
import shlex
import time
import traceback

from absl import logging
from albert_tf.pretraining import beam_logs  # noqa: F401 (before apache_beam, which logs at import)
import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners import runner as runner_lib
import tensorflow as tf

import albert_tf
from albert_tf import errors
from albert_tf.pretraining import outputs
from albert_tf.pretraining import producer
from albert_tf.pretraining import summary as summary_lib

METRICS_NAMESPACE = "albert_tf.pretraining"
_COUNTERS = ("input_files", "documents", "instances", "tokens")


class PipelineFailed(RuntimeError):
    """The Beam pipeline failed; the message names the input file when one was at fault."""


# Runners Beam ships but names to its `create_runner` only by their module path. The
# DirectRunner of Beam 2.77 first tries the Prism runner, which it downloads at run time (and
# fails to, offline), then falls back to the FnApiRunner for a batch pipeline such as this
# one: the FnApiRunner is asked for directly, so nothing is downloaded.
_RUNNER_PATHS = {"DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner",
                 "DirectRunner": "apache_beam.runners.portability.fn_api_runner.FnApiRunner"}
# Beam's DaskRunner puts 128 elements in a partition by default, so every input file would be
# one task on one worker: here each file is its own partition unless the options size them.
_DASK_PARTITIONING = ("--dask_npartitions", "--dask_partition_size")


def pipeline_options(runner, beam_options):
    """PipelineOptions for `--runner` and `--beam_options`, refusing what Beam would not run."""
    try:
        arguments = shlex.split(beam_options or "")
    except ValueError as error:
        raise errors.UserInputError(f"--beam_options={beam_options!r}: {error}") from error
    names = {argument.split("=")[0] for argument in arguments}
    if "--runner" in names:
        raise errors.UserInputError(f"--beam_options={beam_options!r}: give the runner with "
                                 "--runner, not inside --beam_options")
    runner = _RUNNER_PATHS.get(runner, runner)
    if runner == _RUNNER_PATHS["DaskRunner"] and not names & set(_DASK_PARTITIONING):
        arguments.append("--dask_partition_size=1")
    try:
        runner_lib.create_runner(runner)
    except (ValueError, ImportError) as error:
        raise errors.UserInputError(f"--runner={runner}: not a Beam runner this installation can "
                                 f"create ({error}); use 'local' or e.g. DirectRunner, "
                                 "DataflowRunner, FlinkRunner, SparkRunner, PrismRunner") from error
    options = PipelineOptions([f"--runner={runner}", *arguments])
    unknown = options.get_all_options(retain_unknown_options=True).keys() - \
        options.get_all_options().keys()
    if unknown:
        raise errors.UserInputError(f"--beam_options={beam_options!r}: unknown Beam option(s) "
                                 f"{', '.join(sorted('--' + name for name in unknown))}")
    return options


@dataclasses.dataclass
class FileResult:
    """What stage 2 hands to stage 3 for one input file."""
    file_index: int
    stats: producer.FileStats
    temp_path: str
    records: int
    cpu_seconds: float


class _ProduceFile(beam.DoFn):
    """One input file's instances to a hidden temporary TFRecord file."""

    def __init__(self, options, plan):
        self.options = options
        self.plan = plan
        self.counters = {name: Metrics.counter(METRICS_NAMESPACE, name) for name in _COUNTERS}

    def setup(self):
        self.resources = producer.Resources(self.options)

    def process(self, task):
        file_index, path = task
        cpu_start = time.process_time()
        if self.plan.mode == outputs.PER_INPUT:
            final = self.plan.outputs[file_index]
            tf.io.gfile.makedirs(os.path.dirname(final) or ".")
            temp = outputs.scratch_name(final)
        else:
            temp = outputs.part_path(self.plan, file_index)
        records = 0
        try:
            with tf.io.TFRecordWriter(temp) as writer:
                chunks = producer.produce(path, self.resources)
                while True:
                    try:
                        chunk, _, _ = next(chunks)
                    except StopIteration as stop:
                        stats = stop.value
                        break
                    for record in chunk:
                        writer.write(record)
                    records += len(chunk)
        except Exception as error:
            outputs.remove_if_exists(temp)
            raise RuntimeError(_describe_failure(path, error)) from error
        for name, value in (("input_files", 1), ("documents", stats.documents),
                            ("instances", stats.instances), ("tokens", stats.tokens)):
            self.counters[name].inc(value)
        logging.info("done %s: %d documents, %d instances, %d bad bytes replaced", path,
                     stats.documents, stats.instances, stats.replaced_bytes)
        yield FileResult(file_index, stats, temp, records, time.process_time() - cpu_start)


# Runners hand the driver a worker's exception as text (its traceback); the failed file and
# its error travel as one JSON line between these markers.
_FAILED_MARKER = "albert_tf input file failed: "
_END_MARKER = " :albert_tf"


def _describe_failure(path, error):
    return _FAILED_MARKER + json.dumps({
        "path": path, "type": type(error).__name__, "message": str(error),
        "user_input": isinstance(error, errors.UserInputError)}) + _END_MARKER


class _Finish(beam.DoFn):
    """Renames or merges every file's temporary output and writes the run summary."""

    def __init__(self, plan, options, num_inputs, start_time, runner):
        self.plan = plan
        self.options = options
        self.num_inputs = num_inputs
        self.start_time = start_time
        self.runner = runner

    def process(self, results):
        cpu_start = time.process_time()
        results = sorted(results, key=lambda result: result.file_index)
        if [result.file_index for result in results] != list(range(self.num_inputs)):
            raise RuntimeError(f"the pipeline gave results for {len(results)} of "
                               f"{self.num_inputs} input files")
        with contextlib.ExitStack() as stack:
            for result in results:
                stack.callback(outputs.remove_if_exists, result.temp_path)
            if self.plan.mode == outputs.PER_INPUT:
                for result in results:
                    tf.io.gfile.rename(result.temp_path, self.plan.outputs[result.file_index],
                                       overwrite=True)
                counts = {self.plan.outputs[result.file_index]: result.records
                          for result in results}
            else:
                counts = _merge(results, self.plan)
        outputs.remove_stale_temporaries(self.plan)  # Left by retried attempts, if any.
        cpu_seconds = sum(result.cpu_seconds for result in results) + (
            time.process_time() - cpu_start)
        summary = summary_lib.build(
            [result.stats for result in results], counts, self.options, None,
            time.time() - self.start_time, cpu_seconds, self.plan.summary_path,
            runner=self.runner)
        summary_lib.write(self.plan.summary_path, summary)
        yield summary["instances"]


def _merge(results, plan):
    """The round-robin outputs from the parts; renamed onto their names only if all succeed."""
    with contextlib.ExitStack() as stack:
        return outputs.merge_round_robin([result.temp_path for result in results],
                                         plan.outputs, stack)


def build(pipeline, input_files, plan, options, start_time, runner):
    """Adds the three stages to `pipeline`."""
    return (pipeline
            | "InputFiles" >> beam.Create(list(enumerate(input_files)))
            | "Spread" >> beam.Reshuffle()
            | "ProduceFiles" >> beam.ParDo(_ProduceFile(options, plan))
            | "Combine" >> beam.combiners.ToList()
            | "Finish" >> beam.ParDo(_Finish(plan, options, len(input_files), start_time,
                                             runner)))


def run(input_files, plan, options, beam_pipeline_options, start_time):
    """Runs the pipeline to the end and returns the run summary it wrote."""
    runner = beam_pipeline_options.get_all_options()["runner"]
    runner = {path: name for name, path in _RUNNER_PATHS.items()}.get(runner, runner)
    pipeline = beam.Pipeline(options=beam_pipeline_options)
    build(pipeline, input_files, plan, options, start_time, runner)
    try:
        with _package_importable_by_local_workers():
            result = pipeline.run()
            try:
                result.wait_until_finish()
            finally:
                _close_client(result)
        if result.state != runner_lib.PipelineState.DONE:
            raise PipelineFailed(f"the Beam pipeline ended in state {result.state}")
    except Exception as error:
        # The files that did succeed left their temporaries: remove them, as the local run does.
        outputs.remove_stale_temporaries(plan)
        if isinstance(error, PipelineFailed):
            raise
        raise _explained(error) from error
    _log_counters(result)
    with tf.io.gfile.GFile(plan.summary_path) as reader:
        return json.load(reader)


def _close_client(result):
    """The DaskRunner leaves its connection to the scheduler open (its result holds the
    `dask.distributed.Client`); once the cluster stops, that client would retry for 30 s and
    log an error."""
    client = getattr(result, "client", None)
    if client is not None:
        client.close()


@contextlib.contextmanager
def _package_importable_by_local_workers():
    """Worker processes that a runner starts on this machine (the DirectRunner's
    multi_processing, Prism) must import albert_tf to unpickle the stages, from any current
    directory: they inherit PYTHONPATH. Remote workers get the package from their image."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(albert_tf.__file__)))
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, before]))
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def _explained(error):
    """The input file's own error (the same message as the local run's) when the failure came
    from one, else the runner's error."""
    text = "".join(traceback.format_exception(error))
    start = text.find(_FAILED_MARKER)
    end = text.find(_END_MARKER, start)
    if start < 0 or end < 0:
        # The runner's text ends with the worker's own error line; the rest is the traceback.
        lines = [line for line in str(error).splitlines() if line.strip()]
        return PipelineFailed("the Beam pipeline failed: "
                              + (lines[-1].strip() if lines else type(error).__name__))
    failure = json.loads(text[start + len(_FAILED_MARKER):end])
    path, message = failure["path"], failure["message"]
    named = message if path in message else f"{path}: {message}"
    if failure["user_input"]:
        return errors.UserInputError(named)
    return PipelineFailed(f"{named} ({failure['type']}, in a Beam worker)")


def _log_counters(result):
    """Beam's own counts (as the runner's UI shows them), when the runner reports metrics."""
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    except NotImplementedError:
        return
    values = {counter.key.metric.name: counter.committed for counter in counters["counters"]}
    if values:
        logging.info("Beam counters: %s", ", ".join(f"{name}={values[name]}"
                                                    for name in _COUNTERS if name in values))
