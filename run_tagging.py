"""Fine-tune ALBERT to tag every word (part of speech, BIO names): train, evaluate, predict.

The implementation is albert_tf/scripts/run_tagging.py (also installed as `run_tagging`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.run_tagging", run_name="__main__", alter_sys=True)
