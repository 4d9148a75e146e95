"""Keeps bfloat16 runs alive on machines where oneDNN's AMX kernels die with SIGILL.

Some virtual machines advertise AMX (`amx_bf16`, `amx_tile` in /proc/cpuinfo) and the kernel
grants the tile permission, yet oneDNN's AMX matrix-product kernels inside TensorFlow fault
with an illegal instruction on `tilezero` (seen on this project's 2-core x86_64 machines with
TF 2.21 / oneDNN 3.7): the whole process dies, with no Python exception to catch. Where AMX is
advertised, a child process runs a few bfloat16 products once; if it dies with SIGILL,
`ONEDNN_MAX_CPU_ISA` is capped at `AVX512_CORE_FP16` (AVX-512 BF16 dot products, no AMX) for
this process and the processes it starts. oneDNN reads that variable when it creates its first
primitive, so this must run before any TensorFlow op: `albert_tf/__init__.py` calls it. The
verdict is cached per CPU, kernel and TensorFlow version. Setting `ONEDNN_MAX_CPU_ISA` yourself
(e.g. `ALL`) skips the probe.
"""

import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import warnings

ISA_VARIABLE = "ONEDNN_MAX_CPU_ISA"
ISA_WITHOUT_AMX = "AVX512_CORE_FP16"
_PROBE = (
    "import tensorflow as tf\n"
    "a = tf.cast(tf.random.stateless_normal([4, 128, 256], seed=[1, 2]), tf.bfloat16)\n"
    "w = tf.cast(tf.random.stateless_normal([256, 256], seed=[3, 4]), tf.bfloat16)\n"
    "tf.matmul(tf.reshape(a, [-1, 256]), w).numpy()\n"
    "tf.einsum('bsd,de->bse', a, w).numpy()\n"
    "tf.matmul(a, a, transpose_b=True).numpy()\n"
)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return line.split(":", 1)[1].split()
    except OSError:
        return []
    return []


def _tensorflow_version():
    from importlib import metadata
    try:
        return metadata.version("tensorflow")
    except metadata.PackageNotFoundError:
        return "none"


def _cache_path(flags):
    key = hashlib.sha1(" ".join([platform.release(), _tensorflow_version()] + sorted(flags))
                       .encode()).hexdigest()[:16]
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache_home, "albert_tf", f"onednn_amx_{key}.json")


def _cached_verdict(cache):
    """The cached verdict, or None when there is none (or it is unreadable: the probe reruns)."""
    try:
        with open(cache) as reader:
            return bool(json.load(reader)["amx_works"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError) as error:
        warnings.warn(f"albert_tf: ignoring the unreadable oneDNN AMX cache {cache} ({error})",
                      stacklevel=2)
        return None


def _write_atomically(path, text):
    """A plain-os atomic write: this module runs before TensorFlow (and io_utils) may be imported."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".onednn_amx-")
    with os.fdopen(handle, "w") as writer:
        writer.write(text)
    os.replace(temp, path)


def amx_kernels_work():
    """Runs the bfloat16 probe in a child process: True if it ran, False if it died of SIGILL."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop(ISA_VARIABLE, None)
    result = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                            text=True, timeout=300)
    if result.returncode == -signal.SIGILL:
        return False
    if result.returncode != 0:
        raise RuntimeError(f"the oneDNN bfloat16 probe failed (exit {result.returncode}):\n"
                           f"{result.stderr[-2000:]}")
    return True


def cap_isa_if_amx_is_broken():
    """Sets ONEDNN_MAX_CPU_ISA below AMX when AMX is advertised but its kernels fault."""
    if ISA_VARIABLE in os.environ or sys.platform != "linux":
        return
    flags = _cpu_flags()
    if "amx_bf16" not in flags:
        return
    cache = _cache_path(flags)
    works = _cached_verdict(cache)
    if works is None:
        try:
            works = amx_kernels_work()
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            warnings.warn(f"albert_tf: could not check oneDNN's AMX kernels ({error}); "
                          f"set {ISA_VARIABLE}={ISA_WITHOUT_AMX} if bfloat16 runs die with SIGILL",
                          stacklevel=2)
            return
        try:
            _write_atomically(cache, json.dumps({"amx_works": works}) + "\n")
        except OSError as error:
            warnings.warn(f"albert_tf: could not cache the oneDNN AMX check in {cache} ({error}); "
                          "it will run again in the next process", stacklevel=2)
    if not works:
        os.environ[ISA_VARIABLE] = ISA_WITHOUT_AMX
