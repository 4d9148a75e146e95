"""Fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict, export.

The implementation is albert_tf/scripts/run_classifier.py (also installed as `run_classifier`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.run_classifier", run_name="__main__", alter_sys=True)
