"""Fine-tune ALBERT on RACE: train, evaluate every checkpoint, test, export.

The implementation is albert_tf/scripts/run_race.py (also installed as `run_race`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("albert_tf.scripts.run_race", run_name="__main__", alter_sys=True)
