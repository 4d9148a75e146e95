"""Pretraining speed of the demo's and the study's small ALBERTs on this CPU, in tokens/s.

What `make demo` and `make paper` choose between, measured in one invocation, round-robin (one
step of each setting in turn, so a change in a shared machine's load hits all alike), each
figure the median of the measured steps after a warm-up step: float32 and mixed_bfloat16,
each without and with XLA (`--enable_xla`). The reference is float32 without XLA, the
scripts' default: every other setting is given as a ratio to it. The loop is run_pretraining's
(`albert_tf.training.loop.Trainer`, LAMB, MLM + sentence order), fed from memory: the input
pipeline is not part of the figure. The CPU's model and ISA flags are printed first.

    .venv/bin/python bench/bench_small_pretraining.py [--steps=20]
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from absl import app, flags, logging  # noqa: E402

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.demo import precision_choice, recipe  # noqa: E402
import bench_pretraining_step  # noqa: E402

flags.DEFINE_list("settings", ["float32", "float32+xla", "mixed_bfloat16", "mixed_bfloat16+xla"],
                  "precision[+xla] settings; the first is the reference.")
FLAGS = flags.FLAGS  # --steps (measured steps per setting) comes from bench_pretraining_step


def demo_model():
    settings = recipe.demo_settings(quick=False)
    config = AlbertConfig.from_dict(dict(settings["model"], **settings["pretrain_model_overrides"]))
    return config, settings["pretrain_batch"], settings["max_seq_length"], settings[
        "max_predictions_per_seq"]


def main(_):
    logging.set_verbosity(logging.WARNING)
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}", flush=True)
    config, batch, seq, predictions = demo_model()
    steps = {}
    for setting in FLAGS.settings:
        precision, _, xla = setting.partition("+")
        steps[setting] = bench_pretraining_step.our_step(config, batch, precision, xla == "xla",
                                                         seq=seq, predictions=predictions)
    times = {name: [] for name in steps}
    for step in steps.values():
        step()
    for _ in range(FLAGS.steps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    reference = statistics.median(times[FLAGS.settings[0]])
    print(f"\ndemo model (hidden {config.hidden_size}, E {config.embedding_size}, "
          f"{config.num_hidden_layers} layers), batch {batch} x {seq}, {FLAGS.steps} steps each")
    print("| setting | s/step | tokens/s | vs float32 |")
    print("|---|---|---|---|")
    for name, values in times.items():
        seconds = statistics.median(values)
        print(f"| {name} | {seconds:.3f} | {batch * seq / seconds:,.0f} | {reference / seconds:.2f}x |")


if __name__ == "__main__":
    app.run(main)
