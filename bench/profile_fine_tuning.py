"""Where one of `make demo`'s fine-tuning steps spends its time, op by op (issue 37).

Runs the demo's pretrained seed-1 fine-tuning (`demo_fine_tuning.classifier_flags`, over a
finished demo output directory) in this process on one thread, as the demo does (its
`ONE_THREAD`), and traces `--profile_seconds` of its training with `tf.profiler`, starting
`--profile_after` seconds in (past the start-up and the first steps' tracing). Prints each op
type's kernel time a step, the optimizer's (AdamW, clipping) apart; the steps in the window are
counted by the input's ParseExampleV2 kernels, one a batch. The products' share of the product
rate is left to the reader: a step's products depend on its batch's real tokens.

    .venv/bin/python bench/profile_fine_tuning.py --demo_output=demo_output [--train_step=300]
"""

import collections
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.demo import precision_choice, steps  # noqa: E402

os.environ.update(steps.ONE_THREAD)  # read when TensorFlow starts its thread pools

from absl import app, flags  # noqa: E402

import demo_fine_tuning  # noqa: E402
import kernel_trace  # noqa: E402

flags.DEFINE_string("demo_output", None, "A finished `make demo` output directory.")
flags.DEFINE_integer("train_step", 300, "Training steps of the run.", lower_bound=1)
flags.DEFINE_float("profile_after", 15.0, "Seconds after the start when the trace begins.")
flags.DEFINE_float("profile_seconds", 5.0, "Seconds traced.")
flags.DEFINE_integer("top", 20, "Op types listed.")
flags.mark_flag_as_required("demo_output")
FLAGS = flags.FLAGS


def print_profile(log_dir):
    kernel_ms, kernels = collections.Counter(), collections.Counter()
    for _, node, op_type, milliseconds in kernel_trace.kernel_events(log_dir):
        lowered = node.lower()
        part = "optimizer" if "adam" in lowered or "clip_by_global_norm" in lowered else "model"
        kernel_ms[part, op_type] += milliseconds
        kernels[part, op_type] += 1
    batches = sum(n for (_, op_type), n in kernels.items() if op_type == "ParseExampleV2")
    if not batches:
        raise RuntimeError(f"no training step in the {FLAGS.profile_seconds} s traced: "
                           "raise --train_step or lower --profile_after")
    print(f"\nsteps in the trace: {batches}; kernel ms a step: "
          f"{sum(kernel_ms.values()) / batches:.1f}")
    print("| part | op type | ms/step | kernels/step |\n|---|---|---:|---:|")
    for (part, op_type), milliseconds in kernel_ms.most_common(FLAGS.top):
        print(f"| {part} | {op_type} | {milliseconds / batches:.2f} | "
              f"{kernels[part, op_type] / batches:.0f} |")
    for part in ("model", "optimizer"):
        total = sum(ms for (p, _), ms in kernel_ms.items() if p == part)
        print(f"{part}: {total / batches:.1f} ms a step")
    products = sum(ms for (_, op_type), ms in kernel_ms.items() if "MatMul" in op_type)
    print(f"products (MatMul, fused MatMul, batch products): {products / batches:.1f} ms a step")


def main(_):
    import tensorflow as tf
    from albert_tf.scripts import run_classifier
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        classifier_flags = flags.FlagValues()
        run_classifier.define_flags(classifier_flags)
        classifier_flags(["run_classifier", *demo_fine_tuning.classifier_flags(
            os.path.abspath(FLAGS.demo_output), os.path.join(scratch, "run"), FLAGS.train_step)])
        log_dir = os.path.join(scratch, "trace")

        def trace_window():
            time.sleep(FLAGS.profile_after)
            tf.profiler.experimental.start(log_dir)
            time.sleep(FLAGS.profile_seconds)
            tf.profiler.experimental.stop()

        tracer = threading.Thread(target=trace_window)
        tracer.start()
        summary = run_classifier.run(classifier_flags)
        tracer.join()
        print(f"dev result: {summary}")
        print_profile(log_dir)


if __name__ == "__main__":
    app.run(main)
