"""Wall time of one whole fine-tuning process as `make demo` starts twelve of them: start-up,
tracing, training, evaluation and exit, against an earlier `albert_tf/` in the same invocation.

Not one of `make bench`'s `bench_*.py`: it needs a finished `make demo` and an earlier tree.

Round-robin (baseline, then this checkout, `--pairs` times), each run a fresh
`python -m albert_tf.scripts.run_classifier` on one thread (the demo's `ONE_THREAD`) over a
finished `make demo` output directory: its SST-2 data, vocabulary, record cache and pretraining
checkpoint, `--train_step` steps at the demo's flags. The steps themselves are the same code
path in both, so the difference is what a process pays around them. Prints the CPU and its ISA,
each run's seconds, the medians and each run's dev accuracy (the same model must come out).

    make demo   # or any finished demo output directory
    git archive <commit> albert_tf | tar -x -C /tmp/before
    .venv/bin/python bench/process_overhead.py --demo_output=demo_output \
        --baseline_tree=/tmp/before [--baseline_extra_path=.venv/test-references]

`--baseline_extra_path` puts more on the baseline's path: `.venv/test-references` gives it
scikit-learn, as the environment had before requirements-test-references.txt.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # noqa: E402

from albert_tf.demo import precision_choice, steps  # noqa: E402
import demo_fine_tuning  # noqa: E402

flags.DEFINE_string("demo_output", None, "A finished `make demo` output directory.")
flags.DEFINE_string("baseline_tree", None, "A directory holding an earlier `albert_tf/`.")
flags.DEFINE_list("baseline_extra_path", [], "More directories on the baseline's path.")
flags.DEFINE_integer("pairs", 4, "Runs of each, alternating.", lower_bound=1)
flags.DEFINE_integer("train_step", 100, "Training steps of each run.", lower_bound=1)
flags.mark_flags_as_required(["demo_output", "baseline_tree"])
FLAGS = flags.FLAGS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(python_path, scratch):
    """(seconds, dev accuracy) of one process importing albert_tf from `python_path`."""
    output_dir = os.path.join(scratch, "run")
    shutil.rmtree(output_dir, ignore_errors=True)
    env = dict(os.environ, **steps.ONE_THREAD, PYTHONPATH=os.pathsep.join(python_path),
               TF_CPP_MIN_LOG_LEVEL="2")
    command = demo_fine_tuning.classifier_command(os.path.abspath(FLAGS.demo_output), output_dir,
                                                  FLAGS.train_step)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"run_classifier failed ({result.returncode}):\n{result.stderr[-3000:]}")
    accuracy = re.search(r"eval_accuracy = ([\d.]+)", result.stderr).group(1)
    return seconds, accuracy


def main(_):
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    paths = {"baseline": [os.path.abspath(p) for p in [FLAGS.baseline_tree,
                                                       *FLAGS.baseline_extra_path]],
             "this checkout": [REPO_ROOT]}
    runs = {name: [] for name in paths}
    with tempfile.TemporaryDirectory() as scratch:  # cwd outside the checkout: PYTHONPATH decides
        for _ in range(FLAGS.pairs):
            for name, python_path in paths.items():
                runs[name].append(run_once(python_path, scratch))
                print(f"{name}: {runs[name][-1][0]:.1f} s", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    print("| code | seconds per process | median | dev accuracy |")
    print("|---|---|---:|---|")
    for name, values in runs.items():
        seconds = [s for s, _ in values]
        print(f"| {name} | {', '.join(f'{s:.1f}' for s in seconds)} | "
              f"{statistics.median(seconds):.1f} | {', '.join(sorted({a for _, a in values}))} |")


if __name__ == "__main__":
    app.run(main)
