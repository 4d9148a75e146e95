"""How many of `make demo`'s one-thread fine-tuning runs to start at a time on this machine.

The demo runs its twelve fine-tuning processes two at a time, one thread each
(`albert_tf.demo.steps.run_side_by_side`). This starts `--runs` such processes (the demo's
pretrained seed-1 run, `demo_fine_tuning.classifier_flags`, `--train_step` steps) at most K at
a time for each K of `--at_a_time`, round-robin `--repeats` times, and prints each batch's wall
seconds: if a core sat idle between two runs' kernels, a third run at a time would fill it.

    .venv/bin/python bench/fine_tuning_side_by_side.py --demo_output=demo_output \
        [--at_a_time=2,3] [--runs=6] [--train_step=300] [--repeats=2]
"""

import concurrent.futures
import os
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
flags.DEFINE_list("at_a_time", ["2", "3"], "Runs at a time, each setting in turn.")
flags.DEFINE_integer("runs", 6, "Fine-tuning processes per batch.", lower_bound=1)
flags.DEFINE_integer("train_step", 300, "Training steps of each run.", lower_bound=1)
flags.DEFINE_integer("repeats", 2, "Batches of each setting, alternating.", lower_bound=1)
flags.mark_flag_as_required("demo_output")
FLAGS = flags.FLAGS


def run_one(output_dir):
    command = demo_fine_tuning.classifier_command(os.path.abspath(FLAGS.demo_output), output_dir,
                                                  FLAGS.train_step)
    env = dict(os.environ, **steps.ONE_THREAD, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"run_classifier failed ({result.returncode}):\n{result.stderr[-3000:]}")


def batch_seconds(at_a_time, scratch):
    """Seconds for `--runs` fresh runs (each its own new output directory), K at a time."""
    batch_dir = tempfile.mkdtemp(dir=scratch)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=at_a_time) as pool:
        for future in [pool.submit(run_one, os.path.join(batch_dir, f"run{index}"))
                       for index in range(FLAGS.runs)]:
            future.result()
    return time.perf_counter() - start


def main(_):
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    settings = [int(k) for k in FLAGS.at_a_time]
    seconds = {k: [] for k in settings}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(FLAGS.repeats):
            for k in settings:
                seconds[k].append(batch_seconds(k, scratch))
                print(f"{k} at a time: {seconds[k][-1]:.1f} s", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    print(f"| at a time | seconds for {FLAGS.runs} runs of {FLAGS.train_step} steps | median |")
    print("|---:|---|---:|")
    for k, values in seconds.items():
        print(f"| {k} | {', '.join(f'{v:.1f}' for v in values)} | {statistics.median(values):.1f} |")


if __name__ == "__main__":
    app.run(main)
