"""The precision a task model is built in (`from_preset(..., dtype=...)`): Keras' global dtype
policy for the duration of the build, restored after, as `run_classifier.py --precision` sets it
for a run."""

import contextlib

import keras

from albert_tf import errors

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@contextlib.contextmanager
def dtype_policy(dtype):
    """Builds inside under the policy `dtype` (one of PRECISIONS)."""
    if dtype not in PRECISIONS:
        raise errors.UserInputError(f"dtype={dtype!r}: expected one of {PRECISIONS}")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
