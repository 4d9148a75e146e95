"""Pretrain ALBERT (masked LM + sentence order) on create_pretraining_data.py records.

The implementation is albert_tf/scripts/run_pretraining.py (also installed as `run_pretraining`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.run_pretraining", run_name="__main__", alter_sys=True)
