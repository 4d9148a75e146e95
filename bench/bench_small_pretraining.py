"""Pretraining speed of the demo's and the study's small ALBERTs on this CPU, in tokens/s.

What `make demo` and `make paper` choose between, measured in one invocation, round-robin (one
step of each setting in turn, so a change in a shared machine's load hits all alike), each
figure the median of the measured steps after a warm-up step. A setting is
`precision[+xla][+Ncpu]`: float32 or mixed_bfloat16, with `--enable_xla`, and with
`--cpu_replicas=N` (data-parallel over N logical CPUs, `training.strategy.split_cpu`). Thread
counts and logical devices are fixed per process, so each setting runs in a process of its own
that waits, idle, while the others step. The reference is the first setting (float32 on one
device, the scripts' default): every other is given as a ratio to it. The loop is
run_pretraining's (`albert_tf.training.loop.Trainer`, LAMB, MLM + sentence order), fed from
memory: the input pipeline is not part of the figure.

Also printed: each setting's CPU seconds per step (all its threads; on a loaded machine the
steadier figure of work done) and its fraction of the CPU's product rate: model FLOPs per step
(`bench_pretraining_step.model_flops_per_step`, 3x the forward products) per second, over the
best float32 (or bfloat16) rate of a 1024x768 by 768x3072 product on all cores, measured before
and after the steps. The CPU's model and ISA flags are printed first.

    .venv/bin/python bench/bench_small_pretraining.py [--steps=20] [--settings=float32,float32+2cpu]
    git archive <commit> albert_tf | tar -x -C /tmp/before
    .venv/bin/python bench/bench_small_pretraining.py --baseline_tree=/tmp/before \
        --settings=baseline:float32,float32,float32+2cpu
"""

import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if os.environ.get("PYTHONPATH"):  # a baseline worker: its tree's albert_tf comes first
    sys.path[:0] = os.environ["PYTHONPATH"].split(os.pathsep)

from absl import app, flags, logging  # noqa: E402

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.demo import precision_choice, recipe  # noqa: E402
import bench_pretraining_step  # noqa: E402
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

flags.DEFINE_list("settings", ["float32", "float32+2cpu", "mixed_bfloat16",
                               "mixed_bfloat16+2cpu", "float32+xla"],
                  "precision[+xla][+Ncpu] settings; the first is the reference.")
flags.DEFINE_string("baseline_tree", None, "A directory holding an earlier `albert_tf/` (e.g. "
                    "`git archive <commit> albert_tf | tar -x -C DIR`): settings written "
                    "`baseline:<setting>` run that code, so a change is measured against the "
                    "code before it in the same run.")
flags.DEFINE_string("results_name", "small_pretraining", "Writes bench/results/<this>.json (a "
                    "name of its own for a comparison that is not the default one).")
flags.DEFINE_string("worker", None, "Internal: run one setting, stepping once per stdin line.")
FLAGS = flags.FLAGS  # --steps (measured steps per setting) comes from bench_pretraining_step


def demo_model():
    settings = recipe.demo_settings(quick=False)
    config = AlbertConfig.from_dict(dict(settings["model"], **settings["pretrain_model_overrides"]))
    return config, settings["pretrain_batch"], settings["max_seq_length"], settings[
        "max_predictions_per_seq"]


def parse_setting(setting):
    """(precision, enable_xla, cpu_replicas) of `[baseline:]precision[+xla][+Ncpu]`."""
    precision, *options = setting.removeprefix("baseline:").split("+")
    replicas = [int(o[:-3]) for o in options if o.endswith("cpu") and o[:-3].isdigit()]
    unknown = [o for o in options if o != "xla" and not (o.endswith("cpu") and o[:-3].isdigit())]
    if unknown or precision not in ("float32", "mixed_bfloat16") or len(replicas) > 1:
        raise app.UsageError(f"--settings: {setting!r} is not precision[+xla][+Ncpu]")
    return precision, "xla" in options, replicas[0] if replicas else 1


def worker(setting):
    """Builds the setting's trainer, then runs one step per line read; answers wall and CPU s."""
    precision, xla, replicas = parse_setting(setting)
    strategy = None  # the default strategy, as baseline code has it
    if replicas > 1:
        from albert_tf.training import strategy as strategy_lib
        strategy = strategy_lib.resolve_strategy(cpu_replicas=replicas)
    config, batch, seq, predictions = demo_model()
    step = bench_pretraining_step.our_step(config, batch, precision, xla, seq=seq,
                                           predictions=predictions, strategy=strategy)
    step()
    print("READY", flush=True)
    for _ in sys.stdin:
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        print(f"TIME {time.perf_counter() - wall} {time.process_time() - cpu}", flush=True)


def start_worker(setting):
    env = dict(os.environ)
    if setting.startswith("baseline:"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [FLAGS.baseline_tree,
                                                          env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), f"--worker={setting}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline()
    if line.strip() != "READY":
        process.kill()
        raise RuntimeError(f"the worker of {setting!r} failed to start (said {line!r})")
    return process


def step_once(process):
    process.stdin.write("step\n")
    process.stdin.flush()
    _, wall, cpu = process.stdout.readline().split()
    return float(wall), float(cpu)


def main(_):
    logging.set_verbosity(logging.WARNING)
    if FLAGS.worker:
        return worker(FLAGS.worker)
    for setting in FLAGS.settings:
        parse_setting(setting)
        if setting.startswith("baseline:") and not FLAGS.baseline_tree:
            raise app.UsageError(f"--settings: {setting} needs --baseline_tree")
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    config, batch, seq, predictions = demo_model()
    workers = {setting: start_worker(setting) for setting in FLAGS.settings}
    import tensorflow as tf
    rates = {"float32": bench_pretraining_step.tf_matmul_rate(tf.float32),
             "mixed_bfloat16": bench_pretraining_step.tf_matmul_rate(tf.bfloat16)}
    times = {name: [] for name in workers}
    try:
        for _ in range(FLAGS.steps):
            for name, process in workers.items():
                times[name].append(step_once(process))
    finally:
        for process in workers.values():
            process.stdin.close()
            process.wait()
    rates = {"float32": max(rates["float32"], bench_pretraining_step.tf_matmul_rate(tf.float32)),
             "mixed_bfloat16": max(rates["mixed_bfloat16"],
                                   bench_pretraining_step.tf_matmul_rate(tf.bfloat16))}
    flops = bench_pretraining_step.model_flops_per_step(config, batch, seq, predictions)
    reference = statistics.median(wall for wall, _ in times[FLAGS.settings[0]])
    print(f"\ndemo model (hidden {config.hidden_size}, E {config.embedding_size}, "
          f"{config.num_hidden_layers} layers), batch {batch} x {seq}, {FLAGS.steps} steps each, "
          f"{flops / batch / seq / 1e6:.2f} MFLOP/token; product rate (GFLOP/s): float32 "
          f"{rates['float32'] / 1e9:.0f}, bfloat16 {rates['mixed_bfloat16'] / 1e9:.0f}; load "
          f"average at end: {os.getloadavg()[0]:.1f}")
    print("| setting | s/step (min-max) | tokens/s | vs first | CPU s/step | of product rate |")
    print("|---|---|---|---|---|---|")
    table = []
    for name, values in times.items():
        walls = [wall for wall, _ in values]
        seconds = statistics.median(walls)
        cpu = statistics.median(c for _, c in values)
        product = rates[parse_setting(name)[0]]
        print(f"| {name} | {seconds:.3f} ({min(walls):.3f}-{max(walls):.3f}) | "
              f"{batch * seq / seconds:,.0f} | {reference / seconds:.2f}x | {cpu:.3f} | "
              f"{100 * flops / seconds / product:.0f}% |")
        table.append(machine.row("step", name, seconds, "s", f"{FLAGS.settings[0]}'s time", reference,
                                 f"{min(walls):.3f}–{max(walls):.3f} s over {len(walls)} steps"))
    print("written:", machine.write_results(
        FLAGS.results_name, f"pretraining step of make demo's small model (hidden {config.hidden_size}, "
        f"batch {batch} × {seq}), settings against {FLAGS.settings[0]}", table,
        lambda entry: entry["name"] != FLAGS.settings[0],
        {"settings": FLAGS.settings, "steps": FLAGS.steps, "baseline_tree": FLAGS.baseline_tree}))

if __name__ == "__main__":
    app.run(main)
