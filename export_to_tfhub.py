"""Exports an ALBERT model directory as a reusable TF2 SavedModel with the original hub signatures.

The implementation is albert_tf/scripts/export_to_tfhub.py (also installed as `export_to_tfhub`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.export_to_tfhub", run_name="__main__", alter_sys=True)
