"""How an export checks its `--export_precision` and builds its model at it.

A `bfloat16` export builds the model under Keras' `bfloat16` dtype policy: its matrix products
run in bfloat16 with their weights stored in bfloat16 (half the bytes a request reads, no cast
per call), while the layers that pin float32 keep it (LayerNorm, softmax, embedding tables, the
logits' heads); the model's outputs stay float32, so an export's inputs and outputs do not depend
on its precision. `int8` exports build the float32 model (their int8 file is converted from it).
"""

from albert_tf.modeling import dtype_policy

MODEL_POLICIES = {"float32": "float32", "bfloat16": "bfloat16", "int8": "float32"}


def check_export_precision(export_precision, allowed, task=""):
    """Raises ValueError naming --export_precision and `allowed` unless `export_precision` is one
    of them; `task`: " for <task>" when the task allows fewer than the others."""
    if export_precision not in allowed:
        raise ValueError(f"--export_precision must be one of {tuple(allowed)}{task}, got "
                         f"{export_precision!r}")


def model_policy(export_precision):
    """Keras' dtype policy of the model an `export_precision` export builds (MODEL_POLICIES)."""
    return dtype_policy.building_under(MODEL_POLICIES[export_precision])
