"""Keras' global dtype policy, set while a model is built: its layers keep the policy they were
made under, so training (`--precision`), the exports (`--export_precision`) and the Keras task
models (`dtype=`) build at their precision without leaving the policy changed for the caller."""

import contextlib

import keras


@contextlib.contextmanager
def building_under(policy):
    """Keras' global dtype policy set to `policy` (a Keras policy name) inside; restored after."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
