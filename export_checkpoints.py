"""Re-saves an ALBERT checkpoint (model, pretraining heads, global_step) without optimizer slots.

The implementation is albert_tf/scripts/export_checkpoints.py (also installed as `export_checkpoints`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.export_checkpoints", run_name="__main__", alter_sys=True)
