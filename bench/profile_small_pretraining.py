"""Where the demo model's pretraining step spends its time, op by op (issue 37's question: what
stands between the step and the CPU's product rate).

One setting of bench_small_pretraining.py (`precision[+Ncpu]`, e.g. the demo's
`mixed_bfloat16+2cpu`), fed from memory: the unprofiled wall time of `--steps` steps, then a
`tf.profiler` trace of as many, its kernel time summed by op type and by kind (products,
XLA-compiled kernels, collectives, the optimizer, the rest), with the number of kernels a step
runs. The
products' share is also given as a fraction of the product rate measured in the same process.
With N replicas the kernels of all of them add up (N threads' worth a step).

    .venv/bin/python bench/profile_small_pretraining.py --setting=mixed_bfloat16+2cpu [--steps=10]
"""

import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bench_pretraining_step  # noqa: E402
import bench_small_pretraining  # noqa: E402
import kernel_trace  # noqa: E402

from absl import app, flags  # noqa: E402

from albert_tf.demo import precision_choice  # noqa: E402

flags.DEFINE_string("setting", "mixed_bfloat16+2cpu", "precision[+xla][+Ncpu], as "
                    "bench_small_pretraining.py's --settings.")
flags.DEFINE_integer("top", 20, "Op types listed.")
FLAGS = flags.FLAGS  # --steps comes from bench_pretraining_step

_PRODUCTS = ("MatMul", "BatchMatMul")


def kind(node, op_type):
    if any(product in op_type for product in _PRODUCTS):
        return "products"
    if op_type.startswith("Collective"):
        return "collectives (sums over replicas, with the wait for the other one)"
    if op_type == "XlaExecutable":
        return "XLA-compiled kernels (GELU, LayerNorm, masked-LM loss)"
    if "/lamb/" in node or "/adam" in node.lower() or "clip_by_global_norm" in node:
        return "optimizer (clipping, LAMB)"
    return "other ops"


def main(_):
    import tensorflow as tf
    precision, xla, replicas = bench_small_pretraining.parse_setting(FLAGS.setting)
    strategy = None
    if replicas > 1:
        from albert_tf.training import strategy as strategy_lib
        strategy = strategy_lib.resolve_strategy(cpu_replicas=replicas)
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}; setting {FLAGS.setting}")
    config, batch, seq, predictions = bench_small_pretraining.demo_model()
    step = bench_pretraining_step.our_step(config, batch, precision, xla, seq=seq,
                                           predictions=predictions, strategy=strategy)
    for _ in range(5):
        step()
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        step()
    unprofiled = (time.perf_counter() - start) * 1000.0 / FLAGS.steps
    with tempfile.TemporaryDirectory(prefix="profile_small_pretraining_") as log_dir:
        tf.profiler.experimental.start(log_dir)
        start = time.perf_counter()
        for _ in range(FLAGS.steps):
            step()
        profiled = (time.perf_counter() - start) * 1000.0 / FLAGS.steps
        tf.profiler.experimental.stop()
        by_op, by_kind = collections.Counter(), collections.Counter()
        count_op, count_kind = collections.Counter(), collections.Counter()
        for _, node, op_type, milliseconds in kernel_trace.kernel_events(log_dir):
            by_op[op_type] += milliseconds / FLAGS.steps
            count_op[op_type] += 1 / FLAGS.steps
            part = kind(node, op_type)
            by_kind[part] += milliseconds / FLAGS.steps
            count_kind[part] += 1 / FLAGS.steps
    dtype = tf.bfloat16 if precision == "mixed_bfloat16" else tf.float32
    # Measured under this process's thread settings (one intra-op thread per replica with
    # --cpu_replicas), then per thread: the kernels' times below are thread times.
    intra_threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
    thread_rate = bench_pretraining_step.tf_matmul_rate(dtype) / intra_threads
    flops = bench_pretraining_step.model_flops_per_step(config, batch, seq, predictions)
    cores = len(os.sched_getaffinity(0))
    print(f"wall ms/step: {unprofiled:.1f} unprofiled, {profiled:.1f} profiled; kernel ms/step "
          f"(all threads): {sum(by_op.values()):.1f} of {cores} cores x {profiled:.1f} = "
          f"{cores * profiled:.1f}; kernels/step {sum(count_op.values()):.0f}")
    print(f"products: {flops / 1e9:.1f} GFLOP a step, {flops / thread_rate * 1000:.1f} ms of one "
          f"thread at the {dtype.name} product rate measured here ({thread_rate / 1e9:.0f} "
          f"GFLOP/s a thread); their kernels took {by_kind['products']:.1f} ms of thread time, "
          f"{100 * flops / thread_rate * 1000 / max(by_kind['products'], 1e-9):.0f}% of that rate")
    print("\n| kind | ms/step (all threads) | kernels/step |\n|---|---:|---:|")
    for name, milliseconds in by_kind.most_common():
        print(f"| {name} | {milliseconds:.1f} | {count_kind[name]:.0f} |")
    print("\n| op type | ms/step (all threads) | kernels/step |\n|---|---:|---:|")
    for name, milliseconds in by_op.most_common(FLAGS.top):
        print(f"| {name} | {milliseconds:.2f} | {count_op[name]:.0f} |")


if __name__ == "__main__":
    app.run(main)
