"""Converts a checkpoint in the original layout to a Hugging Face model folder.

The implementation is albert_tf/scripts/export_to_hf.py (also installed as `export_to_hf`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.export_to_hf", run_name="__main__", alter_sys=True)
