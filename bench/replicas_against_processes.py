"""The ceiling of data parallelism on this CPU: `--cpu_replicas=2` in one process against two
processes of one thread each that never wait for each other.

`make demo` pretrains with two replicas in lockstep in one process (batch 64 split 32 + 32, one
gradient sum a step). Two independent one-thread processes, each stepping batch 32 of the same
model with its own optimizer, do the same work a global step with nothing shared: no
collective, no wait for the slower replica, no shared thread pool. If they are not faster,
the replicas' hand-off costs nothing measurable and a multi-process (multi-worker) path could
not gain either. Round-robin `--rounds` times; prints ms per global step of 64 sequences
(the two processes: the slower one's), the CPU and its ISA.

    .venv/bin/python bench/replicas_against_processes.py --steps=60 [--rounds=3]
"""

import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from absl import app, flags  # noqa: E402

from albert_tf.demo import precision_choice, steps as demo_steps  # noqa: E402
from albert_tf.training import strategy as strategy_lib  # noqa: E402
import bench_pretraining_step  # noqa: E402  (defines --steps: timed steps a process a round)
import bench_small_pretraining  # noqa: E402

flags.DEFINE_integer("rounds", 3, "Rounds, each setting once per round.", lower_bound=1)
flags.DEFINE_string("precision", "mixed_bfloat16", "The demo's precision by default.")
flags.DEFINE_string("timed_worker", None, "Internal: BATCH,REPLICAS — build, wait, time the steps.")
FLAGS = flags.FLAGS


def worker(spec):
    """Builds one trainer of the demo's model, takes two warm-up steps, says READY, and on the
    next stdin line times `--steps` steps."""
    batch, replicas = (int(value) for value in spec.split(","))
    config, _, seq, predictions = bench_small_pretraining.demo_model()
    strategy = strategy_lib.resolve_strategy(cpu_replicas=replicas) if replicas > 1 else None
    step = bench_pretraining_step.our_step(config, batch, FLAGS.precision, False, seq=seq,
                                           predictions=predictions, strategy=strategy)
    step()
    step()
    print("READY", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        step()
    print(f"SECONDS {time.perf_counter() - start}", flush=True)


def start(batch, replicas, env):
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), f"--timed_worker={batch},{replicas}",
         f"--steps={FLAGS.steps}", f"--precision={FLAGS.precision}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline()
    if line.strip() != "READY":
        process.kill()
        raise RuntimeError(f"a worker (batch {batch}, {replicas} replicas) failed to start "
                           f"(said {line!r})")
    return process


def slowest_ms_per_step(processes):
    """Starts the ready processes together; ms per step of the slowest."""
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    seconds = [float(process.stdout.readline().split()[1]) for process in processes]
    for process in processes:
        if process.wait() != 0:
            raise RuntimeError(f"a worker exited with {process.returncode}")
    return 1000 * max(seconds) / FLAGS.steps


def main(_):
    if FLAGS.timed_worker:
        return worker(FLAGS.timed_worker)
    model, isa = precision_choice.cpu_description()
    print(f"CPU: {model}; ISA: {', '.join(isa)}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    one_thread = dict(os.environ, **demo_steps.ONE_THREAD)
    settings = {"2 replicas, one process (batch 64)": lambda: [start(64, 2, dict(os.environ))],
                "2 one-thread processes (batch 32 each)":
                    lambda: [start(32, 1, one_thread), start(32, 1, one_thread)]}
    results = {name: [] for name in settings}
    for round_index in range(FLAGS.rounds):
        for name, launch in settings.items():
            results[name].append(slowest_ms_per_step(launch()))
            print(f"round {round_index + 1}: {name}: {results[name][-1]:.1f} ms a global step",
                  flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    print(f"| setting ({FLAGS.precision}) | ms a global step, each round | median |")
    print("|---|---|---:|")
    for name, values in results.items():
        print(f"| {name} | {', '.join(f'{v:.1f}' for v in values)} | "
              f"{statistics.median(values):.1f} |")


if __name__ == "__main__":
    app.run(main)
