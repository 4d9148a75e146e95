"""Converts a Hugging Face ALBERT folder to a checkpoint in the original layout.

The implementation is albert_tf/scripts/import_from_hf.py (also installed as `import_from_hf`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.import_from_hf", run_name="__main__", alter_sys=True)
