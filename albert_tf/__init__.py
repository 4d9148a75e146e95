"""albert-tf: ALBERT (Lan et al., ICLR 2020) in TensorFlow 2 / Keras 3, mirroring google-research/ALBERT."""

import os

# TensorFlow logs "failed call to cuInit" as an error on every start where CUDA libraries exist
# but no NVIDIA driver does; with no driver no GPU is expected, so only fatal native logs are
# shown (errors still reach Python as exceptions). Set TF_CPP_MIN_LOG_LEVEL=0 to see them all.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if os.path.exists("/proc/driver/nvidia") else "3")

from albert_tf import native_log, onednn_guard  # noqa: E402 (after the level, before TensorFlow)

native_log.install()  # the level applied to the banner TensorFlow prints before reading it
native_log.demote_routine_lines()  # TensorFlow's routine INFO lines on export and checkpoints

__version__ = "0.1.0"

onednn_guard.cap_isa_if_amx_is_broken()

# The Keras task models, `albert_tf.AlbertTextClassifier`, `albert_tf.AlbertMaskedLM` and the
# optimizers, are the top of the package (albert_tf/keras_tasks/); they load on first use, so
# importing albert_tf for a script or the server does not build them, and no module below
# imports them.
KERAS_TASK_NAMES = ("AlbertTextClassifier", "AlbertTextClassifierPreprocessor", "AlbertMaskedLM",
                    "AlbertMaskedLMPreprocessor", "AdamWeightDecay", "LAMB",
                    "WarmupPolynomialDecay")


def __getattr__(name):
    if name in KERAS_TASK_NAMES:
        import importlib
        return getattr(importlib.import_module("albert_tf.keras_tasks"), name)
    raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
