"""The learning rate, steps and batch size for a small own-data run, measured: every cell of the
grid runs `run_classifier.py --train_file ... --validation_file ...` as a user would, on the
tasks of albert_tf.demo.own_data_tasks, from one checkpoint, once per seed.

    python -m albert_tf.demo.lr_sweep --init_checkpoint=demo_output/pretraining \
        --albert_config_file=demo_output/albert_config.json --spm_model_file=demo_output/vocab/spm.model \
        --results_file=docs/results/lr_sweep.json

Each run's dev accuracy is that of its last step (one evaluation, no checkpoint chosen on dev).
A cell's mean and standard error leave out the runs that collapsed to one class
(albert_tf.demo.verdicts), which are counted beside them; each learning rate is compared with
REFERENCE_RATE (the rate the docs used to advise) paired by seed at the same steps and batch.
Runs whose final evaluation exists are reused, so an interrupted sweep resumes.
"""

import concurrent.futures
import datetime
import json
import math
import os
import shlex
import sys
import time

from absl import logging

from albert_tf import cli, errors
from albert_tf.demo import machine, own_data_tasks, steps, verdicts
from albert_tf.files import io_utils

REFERENCE_RATE = 3e-4
SECONDS_FILE = "sweep_seconds.txt"


def define_flags(flag_values):
    define = cli.Definer(flag_values)
    define.string("data_dir", "data", "Where `make data` put the real data.")
    define.string("output_dir", "lr_sweep_output", "The tasks' files, every run's folder and logs.")
    define.string("results_file", None, "Where to write the results JSON (default: <output_dir>/lr_sweep.json).")
    define.string("albert_config_file", None, "The model's config (with its fine-tuning dropout).")
    define.string("spm_model_file", None, "The SentencePiece model of the checkpoint.")
    define.string("init_checkpoint", None, "The pretrained checkpoint every run starts from "
                  "(none: random initialisation, for checking the machinery only).")
    define.list("tasks", list(own_data_tasks.TASKS), "Tasks of albert_tf.demo.own_data_tasks.")
    define.list("learning_rates", ["1e-5", "3e-5", "1e-4", "3e-4"], "Learning rates to try.")
    define.list("train_steps", ["150", "400"], "Training steps to try (warm-up: a tenth).")
    define.list("batch_sizes", ["32"], "Training batch sizes to try.")
    define.list("seeds", ["1", "2", "3"], "Seeds of every cell (the same seeds pair the cells).")
    define.integer("max_seq_length", 64, "run_classifier.py's --max_seq_length.")
    define.string("precision", "float32", "run_classifier.py's --precision.")
    define.integer("parallel", 2, "Runs at a time (one thread each when more than one).")
    define.bool("run", True, "Run the runs not yet finished (false: only summarize the finished ones).")
    define.string("note", None, "A note for the results file: how the runs were actually made "
                  "(several invocations, other loads) when not by this one command.")


def run_directory(output_dir, task, cell, seed):
    return os.path.join(output_dir, "runs", task,
                        f"lr{cell['learning_rate']}-steps{cell['train_steps']}-batch{cell['batch_size']}-seed{seed}")


def classifier_command(python, files, run_dir, cell, seed, flags):
    """run_classifier.py on the task's files, exactly as docs/fine_tuning.md shows it."""
    command = [
        python, "run_classifier.py", f"--train_file={files['train']}", f"--validation_file={files['dev']}",
        "--text_column_names=text", "--label_column_name=label", f"--output_dir={run_dir}",
        f"--albert_config_file={flags['albert_config_file']}", f"--spm_model_file={flags['spm_model_file']}",
        "--do_train", "--do_eval", f"--seed={seed}", f"--max_seq_length={flags['max_seq_length']}",
        f"--train_batch_size={cell['batch_size']}", "--eval_batch_size=64",
        f"--learning_rate={cell['learning_rate']}", f"--train_step={cell['train_steps']}",
        f"--warmup_step={cell['train_steps'] // 10}", f"--save_checkpoints_steps={cell['train_steps']}",
        f"--iterations_per_loop={max(1, cell['train_steps'] // 10)}", f"--precision={flags['precision']}"]
    init = flags["init_checkpoint"]
    return command + ([f"--init_checkpoint={init}"] if init else ["--allow_random_init"])


def grid(learning_rates, train_steps, batch_sizes):
    """The cells, the shortest runs first: a sweep cut short has whole rows."""
    return [{"learning_rate": float(rate), "train_steps": int(step_count), "batch_size": int(batch)}
            for step_count in sorted(train_steps, key=int) for batch in batch_sizes for rate in learning_rates]


def label_counts(path):
    """{label: count} of a task's dev file (CSV or JSON Lines, a `label` field)."""
    import csv
    counts = {}
    with open(path, encoding="utf-8", newline="") as reader:
        rows = csv.DictReader(reader) if path.endswith(".csv") else (json.loads(line) for line in reader)
        for row in rows:
            counts[row["label"]] = counts.get(row["label"], 0) + 1
    return counts


def cell_summary(scores, rates):
    """Mean and standard error of the runs that did not collapse; the collapsed ones counted."""
    kept = verdicts.kept_scores(scores, rates)
    mean, std = verdicts.mean_std(kept) if kept else (None, None)
    return {"scores": [round(s, 4) for s in scores], "kept": len(kept), "collapsed": len(scores) - len(kept),
            "mean": None if mean is None else round(mean, 4),
            "se": None if not kept or len(kept) < 2 else round(std / math.sqrt(len(kept)), 4)}


def against_reference(cells, rates):
    """Every rate's accuracy less REFERENCE_RATE's at the same steps and batch, paired by seed,
    collapsed pairs left out (verdicts.compare: positive means better than the reference)."""
    by_key = {(c["learning_rate"], c["train_steps"], c["batch_size"]): c for c in cells}
    comparisons = []
    for cell in cells:
        reference = by_key.get((REFERENCE_RATE, cell["train_steps"], cell["batch_size"]))
        if reference is None or cell is reference or reference["seeds"] != cell["seeds"]:
            continue
        result = verdicts.compare(cell["scores"], reference["scores"], rates)
        comparisons.append({"learning_rate": cell["learning_rate"], "reference": REFERENCE_RATE,
                            "train_steps": cell["train_steps"], "batch_size": cell["batch_size"],
                            "gain": None if result["gain"] is None else round(result["gain"], 4),
                            "se": None if result["se"] is None else round(result["se"], 4),
                            "n": result["n"], "positive": result["positive"], "verdict": result["verdict"],
                            "collapsed": result["collapsed"]})
    return comparisons


def best_cell(cells):
    """The cell of the highest mean among those with no collapsed run (None if every cell has one)."""
    clean = [c for c in cells if c["collapsed"] == 0 and c["mean"] is not None]
    return max(clean, key=lambda c: c["mean"]) if clean else None


def run_all(pending, log_dir, parallel):
    """Runs the (run folder, command) pairs `parallel` at a time (one thread each when more
    than one), each run's seconds written beside its results as it ends."""
    env = dict(os.environ, **steps.ONE_THREAD) if parallel > 1 else None

    def run_one(run_dir, command):
        name = os.path.join(*run_dir.split(os.sep)[-2:]).replace(os.sep, "-")
        seconds = steps.run_step(name, command, log_dir, env, f"{name}: " if parallel > 1 else "")
        io_utils.atomic_write_text(os.path.join(run_dir, SECONDS_FILE), f"{seconds:.1f}\n")

    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        for future in [pool.submit(run_one, *item) for item in pending]:
            future.result()


def run_seconds(run_dir):
    path = os.path.join(run_dir, SECONDS_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as reader:
        return float(reader.read())


def run_sweep(flags):
    """Writes the tasks' files, runs every (task, cell, seed) not yet finished, and returns the
    results (also written to the results file)."""
    output_dir = flags["output_dir"]
    log_dir = os.path.join(output_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    cells = grid(flags["learning_rates"], flags["train_steps"], flags["batch_sizes"])
    seeds = [int(seed) for seed in flags["seeds"]]
    files = {task: own_data_tasks.write_task(task, flags["data_dir"], os.path.join(output_dir, "tasks", task))
             for task in flags["tasks"]}
    pending = []
    for cell in cells:
        for task in flags["tasks"]:
            for seed in seeds:
                run_dir = run_directory(output_dir, task, cell, seed)
                if not steps.finished(run_dir, cell["train_steps"]):
                    command = classifier_command(sys.executable, files[task], run_dir, cell, seed, flags)
                    pending.append((run_dir, command))
    started = time.time()
    load_at_start = os.getloadavg()[0]
    if flags["run"]:
        run_all(pending, log_dir, flags["parallel"])
    results = summarize(flags, files, cells, seeds, time.time() - started, load_at_start)
    path = flags["results_file"] or os.path.join(output_dir, "lr_sweep.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    io_utils.atomic_write_text(path, json.dumps(results, indent=1) + "\n")
    return results


def summarize(flags, files, cells, seeds, wall_seconds, load_at_start):
    cpu = machine.cpu_description()
    tasks = {}
    for task, task_files in files.items():
        counts = label_counts(task_files["dev"])
        majority_rate = max(counts.values()) / sum(counts.values())
        rates = verdicts.one_class_rates(majority_rate, labels=len(counts))
        summaries = []
        for cell in cells:
            finished = [seed for seed in seeds
                        if steps.finished(run_directory(flags["output_dir"], task, cell, seed), cell["train_steps"])]
            scores = [float(steps.read_eval_results(os.path.join(
                run_directory(flags["output_dir"], task, cell, seed), "eval_results.txt"))["eval_accuracy"])
                for seed in finished]
            if scores:
                summaries.append(dict(cell, seeds=finished, **cell_summary(scores, rates)))
        tasks[task] = {"format": os.path.splitext(task_files["train"])[1][1:],
                       "train_examples": sum(label_counts(task_files["train"]).values()),
                       "dev_label_counts": counts, "majority_rate": round(majority_rate, 4),
                       "cells": summaries, "against_reference": against_reference(summaries, rates),
                       "best": best_cell(summaries)}
    timed = sorted(seconds for seconds in (run_seconds(run_directory(flags["output_dir"], task, cell, seed))
                                           for task in files for cell in cells for seed in seeds)
                   if seconds is not None)
    return {
        "workload": "run_classifier.py on own CSV / JSON Lines files: dev accuracy by learning rate, steps, batch",
        "command": " ".join(shlex.quote(word) for word in ["python", "-m", "albert_tf.demo.lr_sweep", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "cpu": cpu, "load_average_at_start": round(load_at_start, 2) if flags["run"] else None,
        "note": flags["note"],
        "settings": {"init_checkpoint": flags["init_checkpoint"], "max_seq_length": flags["max_seq_length"],
                     "precision": flags["precision"], "seeds": seeds, "warmup": "a tenth of the steps",
                     "parallel": flags["parallel"], "reference_rate": REFERENCE_RATE},
        "seconds": {"this_invocation": round(wall_seconds), "runs": len(timed),
                    "median_run": round(timed[len(timed) // 2]) if timed else None},
        "tasks": tasks,
    }


def run(flag_values):
    logging.set_verbosity(logging.WARNING)
    for name in ("albert_config_file", "spm_model_file"):
        if not flag_values[name].value:
            raise errors.UserInputError(f"--{name} is required: the model every run fine-tunes")
    run_sweep({name: flag_values[name].value for name in flag_values})


if __name__ == "__main__":
    cli.run_script(define_flags, run)
