"""Raw text to ALBERT pretraining TFRecords (n-gram MLM masking + sentence-order pairs).

The implementation is albert_tf/scripts/create_pretraining_data.py (also installed as `create_pretraining_data`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.create_pretraining_data", run_name="__main__", alter_sys=True)
