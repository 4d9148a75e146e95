"""Fine-tune and evaluate ALBERT on SQuAD v1.1, or v2.0 with --version_2_with_negative.

The implementation is albert_tf/scripts/run_squad.py (also installed as `run_squad`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.run_squad", run_name="__main__", alter_sys=True)
