"""Picks the demo's training precision by measuring this CPU, not by reading its flags.

bfloat16 products are 1.5–3× faster than float32 on CPUs whose oneDNN kernels use AVX-512 BF16
or AMX, and slower where it emulates them (AVX2-only CPUs; some virtual machines that advertise
AMX but fault on it, see `albert_tf.onednn_guard`). A second of products at the demo model's
own shapes, in both precisions, round-robin, settles it on the machine at hand.
"""

import time

import tensorflow as tf

from albert_tf.demo import machine

# bfloat16 must win by this much, beyond the noise of a shared machine (the demo model's
# training step gains about what its bare products gain: bench/bench_small_pretraining.py).
REQUIRED_SPEEDUP = 1.05


def cpu_description():
    """(model name, [ISA flags present]): albert_tf.demo.machine's description, as the
    benchmarks print it."""
    cpu = machine.cpu_description()
    return cpu["model"], machine.present_flags(cpu)


def _product_seconds(dtype, rows, width, inner, repeats):
    a = tf.cast(tf.random.stateless_normal([rows, width], seed=[1, 2]), dtype)
    w = tf.cast(tf.random.stateless_normal([width, inner], seed=[3, 4]), dtype)
    product = tf.function(lambda a, w: tf.reduce_sum(tf.cast(tf.matmul(a, w), tf.float32)))
    product(a, w).numpy()  # traces and warms up
    start = time.perf_counter()
    for _ in range(repeats):
        product(a, w).numpy()
    return (time.perf_counter() - start) / repeats


def measure(rows, width, inner, rounds=5, repeats=20):
    """Best seconds per product of [rows, width] x [width, inner] in float32 and bfloat16."""
    best = {"float32": float("inf"), "mixed_bfloat16": float("inf")}
    for _ in range(rounds):
        for name, dtype in (("float32", tf.float32), ("mixed_bfloat16", tf.bfloat16)):
            best[name] = min(best[name], _product_seconds(dtype, rows, width, inner, repeats))
    return best


def fastest_precision(rows, width, inner):
    """("mixed_bfloat16" or "float32", {precision: seconds per product}) for this CPU."""
    seconds = measure(rows, width, inner)
    speedup = seconds["float32"] / seconds["mixed_bfloat16"]
    return ("mixed_bfloat16" if speedup >= REQUIRED_SPEEDUP else "float32"), seconds
