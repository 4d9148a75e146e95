"""The precision a task model is built in (`from_preset(..., dtype=...)`): Keras' global dtype
policy for the duration of the build, restored after, as `run_classifier.py --precision` sets it
for a run."""

from albert_tf import errors
from albert_tf.modeling import dtype_policy as policy

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def dtype_policy(dtype):
    """Builds inside under the policy `dtype` (one of PRECISIONS)."""
    if dtype not in PRECISIONS:
        raise errors.UserInputError(f"dtype={dtype!r}: expected one of {PRECISIONS}")
    return policy.building_under(dtype)
