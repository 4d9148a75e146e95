"""Noise that reads like errors stays out of a normal run's output; real warnings stay in."""

import os
import subprocess
import sys
import warnings

import pytest

from tests.conftest import REPO_ROOT



@pytest.mark.slow
def test_no_cuinit_error_line_where_no_gpu_is_expected():
    """Without an NVIDIA driver TensorFlow's "failed call to cuInit" error at every start is
    noise: importing albert_tf sets the native log level so it is not printed (and a level the
    user set is kept)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = ("import os, albert_tf, tensorflow as tf\n"
            "tf.config.list_physical_devices()\n"
            "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, cwd=REPO_ROOT, env=dict(env, PYTHONPATH=REPO_ROOT))
    assert result.returncode == 0, result.stderr[-2000:]
    expected = "2" if os.path.exists("/proc/driver/nvidia") else "3"
    assert result.stdout.strip() == expected
    if expected == "3":
        assert "cuInit" not in result.stderr, result.stderr[-2000:]
    kept = subprocess.run([sys.executable, "-c", "import os, albert_tf; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
                          env=dict(env, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="0"))
    assert kept.stdout.strip() == "0"



BANNER = ("All log messages before absl::InitializeLog()", "oneDNN custom operations are on")


@pytest.mark.slow
def test_tensorflow_banner_hidden_unless_the_level_shows_it():
    """TensorFlow 2.21 prints its start-up banner before it reads TF_CPP_MIN_LOG_LEVEL: importing
    albert_tf applies the level to it (native_log); level 0 shows it, and Python's own output
    during the import is kept."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = "import albert_tf, sys\nprint('kept', file=sys.stderr)\nimport tensorflow\n"
    quiet, loud = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=600, cwd=REPO_ROOT,
                                  env=dict(env, PYTHONPATH=REPO_ROOT, **level))
                   for level in ({}, {"TF_CPP_MIN_LOG_LEVEL": "0"})]
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr[-2000:]
    assert all(line not in quiet.stderr for line in BANNER), quiet.stderr[-2000:]
    assert quiet.stderr.startswith("kept\n")
    # What was hidden: the banner TensorFlow itself prints at level 0 on this machine (its oneDNN
    # line only on CPUs where oneDNN is on by default, e.g. AVX-512 VNNI/BF16 or AMX; not AVX2).
    plain = subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True,
                           text=True, timeout=600, cwd=REPO_ROOT,
                           env=dict(env, TF_CPP_MIN_LOG_LEVEL="0"))
    printed = [line for line in BANNER if line in plain.stderr]
    assert BANNER[0] in printed, plain.stderr[-2000:]
    assert all(line in loud.stderr for line in printed), loud.stderr[-2000:]


def test_native_log_filter_keeps_what_the_level_shows(capfd):
    from albert_tf import native_log
    lines = [b"WARNING: All log messages before absl::InitializeLog() is called are written to "
             b"STDERR", b"I0000 00:00:1795655129.619233   23095 port.cc:153] oneDNN on.",
             b"W0000 00:00:1795655129.6 23095 cpu_feature_guard.cc:12] slow",
             b"E1126 01:02:03.000004 1 cuda_dnn.cc:8579] Unable to register",
             b"F0000 00:00:1.0 7 check.cc:1] Check failed", b"Traceback (most recent call last):",
             b"  I0000 is not at the start", b"I0000 not a native line"]
    with native_log.filtered_stderr(2):
        os.write(2, b"\n".join(lines) + b"\n")
    assert capfd.readouterr().err.encode().splitlines() == lines[3:]
    assert [native_log.shown(line, 3) for line in lines[3:5]] == [False, True]
    assert all(native_log.shown(line, 0) for line in lines)


def test_gradient_warning_hidden_only_when_just_the_unused_pooler_lacks_gradients():
    """SQuAD and tagging heads never read the pooled output, so Keras warned "Gradients do not
    exist" for the pooler at every trace; a variable missing its gradient elsewhere is a bug
    and must still be reported."""
    import keras
    import tensorflow as tf
    from albert_tf.training import loop
    pooler, head = keras.layers.Dense(2, name="pooler"), keras.layers.Dense(2, name="head")
    pooler.build((None, 2))
    head.build((None, 2))
    variables = pooler.trainable_variables + head.trainable_variables
    optimizer = keras.optimizers.SGD()
    optimizer.build(variables)
    gradients = [None, None] + [tf.ones_like(v) for v in head.trainable_variables]
    with warnings.catch_warnings(record=True) as caught:
        # Other tests may have shown (and so registered) the same warning already: start clean,
        # with the loop's filter on top.
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", loop.UNUSED_POOLER_WARNING)
        optimizer.apply(gradients, variables)
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", loop.UNUSED_POOLER_WARNING)
        optimizer.apply([None] + gradients[1:3] + [None], variables)
    assert [w for w in caught if "Gradients do not exist" in str(w.message)]


_ROUTINE_RUN = r"""
import logging, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
from absl import logging as absl_logging
import tensorflow as tf

class Model(tf.Module):
    def __init__(self):
        self.scale = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="input/ids")])
    def serve(self, ids):
        return {"y": ids * self.scale}

def checkpoint_and_export(step):
    model = Model()
    tf.train.Checkpoint(model=model).save(os.path.join(sys.argv[1], f"ckpt{step}", "ckpt"))
    tf.saved_model.save(model, os.path.join(sys.argv[1], f"export{step}"),
                        signatures={"serving_default": model.serve})

absl_logging.use_absl_handler()
absl_logging.set_verbosity(absl_logging.INFO)  # what the scripts run at (albert_tf.cli)
checkpoint_and_export(1)
print("=== albert_tf imported", file=sys.stderr, flush=True)
import albert_tf
checkpoint_and_export(2)
print("=== -v 1", file=sys.stderr, flush=True)
absl_logging.set_verbosity(absl_logging.DEBUG)
checkpoint_and_export(3)
"""
ROUTINE_LINES = ("contains input name(s) input/ids, resource with unsupported characters which "
                 "will be renamed", "Sharding callback duration", "Assets written to")


@pytest.mark.slow
def test_tensorflow_routine_lines_are_debug_lines(tmp_path):
    """TensorFlow's INFO lines on every SavedModel export (input names renamed, "Assets written
    to", printed twice: by the `tensorflow` logger's own handler and by absl's) and after every
    checkpoint ("Sharding callback duration"): shown at the scripts' default verbosity until
    albert_tf is imported, then only at -v 1, where they are DEBUG lines."""
    result = subprocess.run([sys.executable, "-c", _ROUTINE_RUN, str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    before, rest = result.stderr.split("=== albert_tf imported\n")
    after, verbose = rest.split("=== -v 1\n")
    for line in ROUTINE_LINES:
        assert line in before, before[-2000:]  # TensorFlow's own behaviour, the reference
        assert line not in after, after[-2000:]
        assert line in verbose, verbose[-2000:]
    assert before.count("Assets written to") == 2
    assert "DEBUG:tensorflow:Assets written to" in verbose
