"""Picks the demo's training precision by measuring this CPU, not by reading its flags.

bfloat16 products are 1.5–3× faster than float32 on CPUs whose oneDNN kernels use AVX-512 BF16
or AMX, and slower where it emulates them (AVX2-only CPUs; some virtual machines that advertise
AMX but fault on it, see `albert_tf.onednn_guard`). A second of products at the demo model's
own shapes, in both precisions, round-robin, settles it on the machine at hand.
"""

import re
import time

import tensorflow as tf

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
# bfloat16 must win by this much, beyond the noise of a shared machine (the demo model's
# training step gains about what its bare products gain: bench/bench_small_pretraining.py).
REQUIRED_SPEEDUP = 1.05


def cpu_description():
    """The CPU's model name and the instruction-set flags that decide float32 vs bfloat16 speed."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            text = cpuinfo.read()
    except OSError:
        return model, []
    name = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    found = re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE)
    if name:
        model = name.group(1).strip()
    if found:
        flags = set(found.group(1).split())
    return model, [flag for flag in ISA_FLAGS if flag in flags]


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
