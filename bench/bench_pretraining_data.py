"""create_pretraining_data.py speed and memory on a real corpus (the Brown Corpus, 10 files).

    python bench/bench_pretraining_data.py            # or `make bench`

Each run is the command-line script in a subprocess, as users run it, with the issue's
baseline settings (--max_seq_length=512, the default --max_predictions_per_seq=20, a
30,000-piece vocabulary trained on the corpus by albert_tf/text/vocab.py). Reported per run:
instances/s after start-up (the summary's own timing, which is how the baseline of ~143
instances/s for the original script was measured) and end to end, the CPUs the run actually
got and instances per CPU-second (steadier than wall time on a shared machine), input MB/s,
and peak memory sampled every 20 ms: of the whole process tree (sum of PSS, which counts
shared pages once), of the parent (RSS; it holds TensorFlow for writing TFRecords) and of the
largest worker (PSS). --num_workers 1 and 2, and the Apache Beam DirectRunner
(--runner=DirectRunner, multi_processing with 1 and 2 workers), run in the same invocation, one
after the other, so their ratios are meaningful on a noisy machine; the Beam runs' outputs are
checked byte for byte against the local ones. Further runs vary --dupe_factor and the number of
input files to show that memory does not grow with either.
"""

import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from absl import app
from absl import flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
from albert_tf.text import vocab  # noqa: E402  (needs the repository on the path)

BASELINE_INSTANCES_PER_SECOND = 143.0  # The original script, issue 3, this machine kind.

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", os.path.join(REPO_ROOT, "data"), "Where brown/*.txt are.")
flags.DEFINE_string("work_dir", os.path.join(tempfile.gettempdir(), "albert_tf_bench_pretraining"),
                    "Scratch directory; the trained vocabulary is kept there between runs.")
flags.DEFINE_integer("vocab_size", 30000, "Pieces of the SentencePiece vocabulary.")


def _children(pid):
    """Children of every thread of `pid` (Beam starts its workers from a non-main thread)."""
    children = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as handle:
                children += [int(p) for p in handle.read().split()]
        except OSError:
            pass
    return children


def _memory_kib(pid):
    """(RSS, PSS) of a process. PSS splits shared pages between the processes sharing them, so
    the tree's sum does not count a page twice (e.g. the parent's pages in a child between
    fork and exec, when the worker processes are spawned)."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def _is_worker(pid):
    """A worker process, local or Beam's (after exec; a child between fork and exec is still
    the parent)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
            return (b"albert_tf.pretraining.workers" in command
                    or b"apache_beam.runners.worker.sdk_worker_main" in command)
    except OSError:
        return False


class TreeMemory:
    """Samples the RSS of a process and all its descendants until stopped."""

    def __init__(self, pid, interval=0.02):
        self.pid = pid
        self.interval = interval
        self.peak_total = self.peak_parent = self.peak_child = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            pids, frontier = [], [self.pid]
            while frontier:
                pid = frontier.pop()
                pids.append(pid)
                frontier.extend(_children(pid))
            sizes = {pid: _memory_kib(pid) for pid in pids}
            self.peak_total = max(self.peak_total, sum(pss for _, pss in sizes.values()))
            self.peak_parent = max(self.peak_parent, sizes.get(self.pid, (0, 0))[0])
            workers = [pss for pid, (_, pss) in sizes.items() if _is_worker(pid)]
            self.peak_child = max([self.peak_child] + workers)
            time.sleep(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()


def _vocabulary(inputs):
    model = os.path.join(FLAGS.work_dir, f"brown-{FLAGS.vocab_size}.model")
    if not os.path.exists(model):
        print(f"training a {FLAGS.vocab_size}-piece vocabulary on {len(inputs)} files ...",
              flush=True)
        vocab.train_albert_spm(inputs, model[:-len(".model")], vocab_size=FLAGS.vocab_size)
    return model


def run(label, inputs, model, dupe_factor, num_workers, beam=False):
    out_dir = os.path.join(FLAGS.work_dir, label)
    shutil.rmtree(out_dir, ignore_errors=True)
    output = os.path.join(out_dir, "train.tfrecord")
    command = [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"),
               f"--input_file={','.join(inputs)}", f"--output_file={output}",
               f"--spm_model_file={model}", "--max_seq_length=512",
               f"--dupe_factor={dupe_factor}"]
    if beam:
        command += ["--runner=DirectRunner", f"--beam_options=--direct_num_workers={num_workers} "
                    "--direct_running_mode=multi_processing"]
    else:
        command.append(f"--num_workers={num_workers}")
    cpu_before = _children_cpu_seconds()
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    memory = TreeMemory(process.pid)
    _, stderr = process.communicate()
    wall = time.monotonic() - start
    e2e_cpu = _children_cpu_seconds() - cpu_before
    memory.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{label} failed ({process.returncode}):\n{stderr[-3000:]}")
    with open(output + ".summary.json") as handle:
        summary = json.load(handle)
    return {
        "label": label, "files": len(inputs), "dupe_factor": dupe_factor,
        "num_workers": num_workers, "instances": summary["instances"],
        "seconds": summary["elapsed_seconds"], "wall_seconds": wall,
        "instances_per_second": summary["instances"] / summary["elapsed_seconds"],
        "instances_per_cpu_second": summary["instances"] / summary["cpu_seconds"],
        "cpu_share": summary["cpu_seconds"] / summary["elapsed_seconds"],
        "wall_instances_per_second": summary["instances"] / wall,
        "e2e_instances_per_cpu_second": summary["instances"] / e2e_cpu,
        "input_mb_per_second": summary["input"]["bytes"] / 1e6 / summary["elapsed_seconds"],
        "peak_rss_mib": memory.peak_total / 1024, "parent_rss_mib": memory.peak_parent / 1024,
        "worker_rss_mib": memory.peak_child / 1024, "output": output,
    }


def _children_cpu_seconds():
    """CPU seconds of this process's finished children and theirs (each script run, start-up
    and every worker included): the one CPU figure measured the same way for both runners."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _outputs(result):
    return sorted(glob.glob(result["output"] + "-*"))


def main(argv):
    del argv
    inputs = sorted(glob.glob(os.path.join(FLAGS.data_dir, "brown", "brown-*.txt")))
    if len(inputs) < 10:
        sys.exit(f"expected the 10 Brown shards in {FLAGS.data_dir}/brown (run `make data`)")
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    model = _vocabulary(inputs)
    megabytes = sum(os.path.getsize(p) for p in inputs) / 1e6
    print(f"corpus: {len(inputs)} files, {megabytes:.2f} MB; vocabulary: {model}", flush=True)
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)", flush=True)
    plan = [("w1-dupe5", inputs, 5, 1, False), ("beam-w1-dupe5", inputs, 5, 1, True),
            ("w2-dupe5", inputs, 5, 2, False), ("beam-w2-dupe5", inputs, 5, 2, True),
            ("w2-dupe1", inputs, 1, 2, False), ("w2-dupe10", inputs, 10, 2, False),
            ("beam-w2-dupe10", inputs, 10, 2, True),
            ("w2-dupe5-2files", inputs[:2], 5, 2, False)]
    results = []
    header = (f"{'run':<16}{'files':>6}{'dupe':>5}{'workers':>8}{'instances':>10}{'inst/s':>8}"
              f"{'x base':>7}{'CPUs used':>10}{'inst/CPU-s':>11}{'e2e inst/s':>11}{'MB/s':>6}"
              f"{'tree PSS':>9}{'parent RSS':>11}{'worker PSS':>11}")
    print(header, flush=True)
    for label, files, dupe, workers, beam in plan:
        r = run(label, files, model, dupe, workers, beam)
        results.append(r)
        print(f"{r['label']:<16}{r['files']:>6}{r['dupe_factor']:>5}{r['num_workers']:>8}"
              f"{r['instances']:>10}{r['instances_per_second']:>8.0f}"
              f"{r['instances_per_second'] / BASELINE_INSTANCES_PER_SECOND:>7.1f}"
              f"{r['cpu_share']:>10.2f}{r['instances_per_cpu_second']:>11.0f}"
              f"{r['wall_instances_per_second']:>11.0f}{r['e2e_instances_per_cpu_second']:>12.0f}"
              f"{r['input_mb_per_second']:>6.2f}"
              f"{r['peak_rss_mib']:>8.0f}M{r['parent_rss_mib']:>10.0f}M"
              f"{r['worker_rss_mib']:>10.0f}M", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    one, beam_one, two, beam_two = results[:4]
    expected = [open(path, "rb").read() for path in _outputs(one)]
    identical = all([open(path, "rb").read() for path in _outputs(other)] == expected
                    for other in (two, beam_one, beam_two))
    print(f"\nnum_workers 2 vs 1: {two['instances_per_second'] / one['instances_per_second']:.2f}x"
          f" after start-up, {one['wall_seconds'] / two['wall_seconds']:.2f}x end to end, "
          f"{two['instances_per_cpu_second'] / one['instances_per_cpu_second']:.2f}x per CPU-second;"
          f" outputs of local 1 and 2 workers and Beam 1 and 2 workers byte-identical: {identical}")
    for local, beam in ((one, beam_one), (two, beam_two)):
        print(f"Beam DirectRunner {beam['num_workers']} worker(s) vs local pool: "
              f"{beam['instances_per_second'] / local['instances_per_second']:.2f}x after start-up,"
              f" {local['wall_seconds'] / beam['wall_seconds']:.2f}x end to end, "
              f"{beam['e2e_instances_per_cpu_second'] / local['e2e_instances_per_cpu_second']:.2f}x"
              " per CPU-second end to end")
    print(f"baseline (original script, issue 3): {BASELINE_INSTANCES_PER_SECOND:.0f} instances/s;"
          f" num_workers=2: {two['instances_per_second'] / BASELINE_INSTANCES_PER_SECOND:.1f}x"
          f" (target 4x)")
    if not identical:
        sys.exit("num_workers 1 and 2 or the Beam runs gave different outputs")
    table = [machine.row("after start-up", r["label"], r["instances_per_second"], "instances/s",
                         "the original script (issue 3's rate)", BASELINE_INSTANCES_PER_SECOND,
                         f"peak PSS {r['peak_rss_mib']:.0f} MiB") for r in results]
    print("written:", machine.write_results(
        "pretraining_data", f"pretraining data, Brown {megabytes:.0f} MB, seq 512, against the original "
        "script's rate", table, lambda entry: entry["name"].startswith("w2-"),
        {"vocab_size": FLAGS.vocab_size, "runs": [{key: value for key, value in r.items() if key != "output"}
                                                  for r in results]}))


if __name__ == "__main__":
    app.run(main)
