"""Serves an exported model over TensorFlow Serving's REST API, or classifies text once.

The implementation is albert_tf/scripts/serve.py (also installed as `albert_serve`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.serve", run_name="__main__", alter_sys=True)
