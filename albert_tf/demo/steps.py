"""The one command runner of `make demo` and `make paper`: each step is a command of the
project's own scripts, printed before it runs (so a user can run it alone), its whole output in a
log, its progress shown live; plus the readers of what those scripts write."""

import concurrent.futures
import os
import re
import shlex
import subprocess
import time


def run_step(step, command, log_dir, env=None, tag=""):
    """Runs one step, printing the command first so the user can run it alone, then its log
    path, then its progress live (the script's log messages, one short line each, after `tag`
    when steps run side by side); the whole output goes to the log."""
    printable = " ".join(shlex.quote(part) for part in command)
    log_path = os.path.join(log_dir, f"{step}.log")
    print(f"\n=== {step}\n$ {printable}\n    (full log: {log_path})", flush=True)
    start = time.time()
    with open(log_path, "w") as log, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            bufsize=1, env=env) as process:
        for line in process.stdout:
            log.write(line)
            message = progress_message(line)
            if message is not None:
                print(f"    {tag}[{time.time() - start:5.0f} s] {message}", flush=True)
        returncode = process.wait()
    elapsed = time.time() - start
    if returncode != 0:
        with open(log_path) as log:
            tail = "".join(log.readlines()[-40:])
        raise RuntimeError(f"step '{step}' failed (exit {returncode}); log {log_path}:\n{tail}")
    print(f"    {tag}done in {elapsed:.0f} s", flush=True)
    return elapsed


# A small model's training step keeps one core busy at most a part of the time: two runs of one
# thread each finish a pair of fine-tuning runs sooner than one after the other on two threads.
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1"}


def run_side_by_side(steps, log_dir):
    """Runs `steps` ([(name, command)]) at most two at a time, one thread each; returns
    {name: seconds}. The first failure is raised once the others have ended."""
    env = dict(os.environ, **ONE_THREAD)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_step, name, command, log_dir, env, f"{name}: ")
                   for name, command in steps}
        return {name: future.result() for name, future in futures.items()}


# absl's prefix: level, date, time, thread, file:line] (TensorFlow's native lines have the
# same layout but name a .cc file)
_ABSL_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ (?![^\]]*\.cc:)[^\]]*:\d+\] (.*)$")
_PYTHON_WARNING = re.compile(r"^\S*(Warning|Error): ")
PROGRESS_WIDTH = 150


def progress_message(line):
    """The part of a step's output line worth showing on the terminal (its absl log message,
    or a Python warning), cut to PROGRESS_WIDTH characters; None for the rest (TensorFlow's
    native start-up lines, tracebacks, which the log keeps)."""
    line = line.rstrip("\n")
    match = _ABSL_LINE.match(line)
    message = match.group(1) if match else line if _PYTHON_WARNING.match(line) else None
    if message is None or not message.strip() or message.startswith("*** Example"):
        return None  # the first examples' features, as the original logs them: log only
    step = _TRAINING_STEP.match(message)
    if step:  # every metric is in the log and TensorBoard; the terminal gets loss and ETA
        message = f"step {step['step']}: loss = {step['loss']}, ETA {step['eta']}"
    return message if len(message) <= PROGRESS_WIDTH else message[:PROGRESS_WIDTH - 1] + "…"


_TRAINING_STEP = re.compile(r"^step (?P<step>\d+/\d+): loss = (?P<loss>\S+?),.*, ETA (?P<eta>\S+)$")


def read_eval_results(path):
    """The last block of `key = value` lines of an eval_results.txt."""
    values = {}
    if not os.path.exists(path):
        return values
    with open(path) as reader:
        for line in reader:
            if " = " in line:
                key, value = line.strip().split(" = ", 1)
                values[key] = value
    return values


_STEP_LINE = re.compile(r"step (\d+)/\d+: loss = ([-+0-9.eE]+|nan|inf)")


def pretraining_loss(log_path):
    """The training loss of the first and last logged loop of this run (the curve is in TensorBoard)."""
    with open(log_path) as log:
        points = [(int(step), float(loss)) for step, loss in _STEP_LINE.findall(log.read())]
    if not points:
        return {"logged_loops": 0}
    return {"logged_loops": len(points), "first_step": points[0][0], "first": points[0][1],
            "last_step": points[-1][0], "last": points[-1][1]}


def finished(output_dir, steps):
    """Whether a training run in `output_dir` already evaluated its final step."""
    return read_eval_results(os.path.join(output_dir, "eval_results.txt")).get("global_step") == str(steps)
