"""The oneDNN AMX guard: bfloat16 products survive in a fresh process; the verdict is cached."""

import os
import subprocess
import sys

import pytest

from albert_tf import onednn_guard
from tests.conftest import REPO_ROOT


def test_bfloat16_products_run_in_a_fresh_process_that_imports_albert_tf(tmp_path):
    # Without the guard, this dies with SIGILL on machines whose AMX kernels fault.
    code = ("import albert_tf, tensorflow as tf\n"
            "a = tf.cast(tf.random.stateless_normal([2, 64, 128], seed=[5, 6]), tf.bfloat16)\n"
            "w = tf.cast(tf.random.stateless_normal([128, 128], seed=[7, 8]), tf.bfloat16)\n"
            "exact = tf.einsum('bsd,de->bse', tf.cast(a, tf.float32), tf.cast(w, tf.float32))\n"
            "got = tf.cast(tf.einsum('bsd,de->bse', a, w), tf.float32)\n"
            "print(float(tf.reduce_max(tf.abs(got - exact)) / tf.reduce_max(tf.abs(exact))))\n")
    env = {key: value for key, value in os.environ.items() if key != onednn_guard.ISA_VARIABLE}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # Kernels that accumulate 128 products in bfloat16 (seen on some CI CPUs) err by ~2% of the
    # largest output; a broken kernel errs by ~100%.
    assert float(result.stdout.strip().splitlines()[-1]) < 0.05


def _pretend_amx_is_advertised(monkeypatch, tmp_path, works, calls):
    monkeypatch.delenv(onednn_guard.ISA_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(onednn_guard, "_cpu_flags", lambda: ["avx512_bf16", "amx_bf16", "amx_tile"])
    monkeypatch.setattr(onednn_guard.sys, "platform", "linux")

    def probe():
        calls.append(1)
        return works
    monkeypatch.setattr(onednn_guard, "amx_kernels_work", probe)


def test_broken_amx_caps_the_isa_and_the_verdict_is_cached(monkeypatch, tmp_path):
    calls = []
    _pretend_amx_is_advertised(monkeypatch, tmp_path, works=False, calls=calls)
    onednn_guard.cap_isa_if_amx_is_broken()
    assert os.environ[onednn_guard.ISA_VARIABLE] == onednn_guard.ISA_WITHOUT_AMX
    monkeypatch.delenv(onednn_guard.ISA_VARIABLE)
    onednn_guard.cap_isa_if_amx_is_broken()
    assert os.environ[onednn_guard.ISA_VARIABLE] == onednn_guard.ISA_WITHOUT_AMX
    assert len(calls) == 1


def test_working_amx_is_left_alone(monkeypatch, tmp_path):
    calls = []
    _pretend_amx_is_advertised(monkeypatch, tmp_path, works=True, calls=calls)
    onednn_guard.cap_isa_if_amx_is_broken()
    assert onednn_guard.ISA_VARIABLE not in os.environ
    assert len(calls) == 1


def test_a_user_setting_skips_the_probe(monkeypatch, tmp_path):
    calls = []
    _pretend_amx_is_advertised(monkeypatch, tmp_path, works=False, calls=calls)
    monkeypatch.setenv(onednn_guard.ISA_VARIABLE, "ALL")
    onednn_guard.cap_isa_if_amx_is_broken()
    assert os.environ[onednn_guard.ISA_VARIABLE] == "ALL"
    assert calls == []


def test_an_unreadable_cache_reruns_the_probe_and_an_unwritable_one_only_warns(monkeypatch, tmp_path):
    calls = []
    _pretend_amx_is_advertised(monkeypatch, tmp_path, works=False, calls=calls)
    cache = onednn_guard._cache_path(onednn_guard._cpu_flags())
    os.makedirs(os.path.dirname(cache))
    with open(cache, "w") as writer:
        writer.write("{not json")
    with pytest.warns(UserWarning, match="unreadable"):
        onednn_guard.cap_isa_if_amx_is_broken()
    assert len(calls) == 1 and os.environ[onednn_guard.ISA_VARIABLE] == onednn_guard.ISA_WITHOUT_AMX

    monkeypatch.delenv(onednn_guard.ISA_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))

    def unwritable(path, text):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(onednn_guard, "_write_atomically", unwritable)
    with pytest.warns(UserWarning, match="could not cache"):
        onednn_guard.cap_isa_if_amx_is_broken()
    assert len(calls) == 2 and os.environ[onednn_guard.ISA_VARIABLE] == onednn_guard.ISA_WITHOUT_AMX
