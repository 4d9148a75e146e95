"""Trains an ALBERT-layout SentencePiece vocabulary (<prefix>.model, <prefix>.vocab).

The implementation is albert_tf/scripts/build_vocab.py (also installed as `build_vocab`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.build_vocab", run_name="__main__", alter_sys=True)
