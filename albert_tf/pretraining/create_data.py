"""Raw text files to pretraining TFRecords: the library behind create_pretraining_data.py.

Input files are processed independently: with runner "local", in parallel worker processes,
each streaming its instances to the parent, which writes them; with a Beam runner, by the
pipeline of `beam_pipeline` (see `outputs` for the file layout and `producer` for determinism
and memory). The output is byte-identical for the same inputs and options, whatever the
runner and `num_workers` are.
"""

import os
import resource
import time

from absl import logging
import tensorflow as tf

from albert_tf import errors
from albert_tf.files import output_lock

from albert_tf.pretraining import documents
from albert_tf.pretraining import file_patterns
from albert_tf.pretraining import outputs
from albert_tf.pretraining import producer
from albert_tf.pretraining import progress as progress_lib
from albert_tf.pretraining import summary as summary_lib
from albert_tf.pretraining import workers


def default_num_workers():
    """All cores this process may run on."""
    return len(os.sched_getaffinity(0))


LOCAL = "local"


def create_pretraining_data(input_file, output_file, options, num_workers=None,
                            progress_interval_seconds=10.0, runner=LOCAL, beam_options=None):
    """Writes the TFRecords and `<first output>.summary.json`; returns the summary dict.

    `input_file`/`output_file` are the flags' comma-separated strings (input items are globs).
    `runner`: "local" (this machine's worker processes) or a Beam runner name, with
    `beam_options` its pipeline options as one command-line string.
    """
    start = time.monotonic()
    wall_start = time.time()
    cpu_start = _cpu_seconds()
    options.validate()
    _check_runner_flags(runner, num_workers, beam_options)
    input_files = file_patterns.expand(input_file, "--input_file")
    for path in input_files:
        documents.check_not_empty(path)
    plan = outputs.plan_outputs(output_file, len(input_files))
    clashes = set(map(os.path.abspath, input_files)) & set(
        map(os.path.abspath, plan.outputs + [plan.summary_path]))
    if clashes:
        raise errors.UserInputError(
            f"--output_file would overwrite input file(s): {sorted(clashes)}")
    output_dir = os.path.dirname(plan.outputs[0]) or "."
    with output_lock.hold(output_dir, "data"):
        removed = outputs.remove_stale_temporaries(plan)  # Safe: we hold the lock.
        if removed:
            logging.warning("Removed %d temporary files a killed run left: %s", len(removed),
                            ", ".join(removed))
        outputs.check_no_mixed_shards(plan)
        if runner == LOCAL:
            return _create(input_files, plan, options, num_workers, progress_interval_seconds,
                           start, cpu_start)
        return _create_on_beam(input_files, plan, options, runner, beam_options, wall_start)


def _resources(options):
    """The per-process resources, built here first so that an unreadable vocabulary fails
    before any work; logs the note when max_predictions_per_seq caps the masking budget."""
    resources = producer.Resources(options)
    note = options.budget_cap_note()
    if note:
        logging.warning("%s", note)
    return resources


def _check_runner_flags(runner, num_workers, beam_options):
    if not runner:
        raise errors.UserInputError("--runner is empty: expected 'local' or a Beam runner name "
                                 "such as DirectRunner or DataflowRunner")
    if runner == LOCAL and beam_options:
        raise errors.UserInputError(f"--beam_options={beam_options!r} needs a Beam --runner "
                                 "(e.g. --runner=DirectRunner); --runner=local ignores it")
    if runner != LOCAL and num_workers is not None:
        raise errors.UserInputError(
            f"--num_workers={num_workers} is for --runner=local; on --runner={runner} the "
            "runner's own options set the workers, e.g. --beam_options='--direct_num_workers=2 "
            "--direct_running_mode=multi_processing' for the DirectRunner")


def _create_on_beam(input_files, plan, options, runner, beam_options, wall_start):
    # Imported here: Apache Beam takes seconds to import and the local path does not need it.
    from albert_tf.pretraining import beam_pipeline

    pipeline_options = beam_pipeline.pipeline_options(runner, beam_options)
    _resources(options)  # The workers build their own.
    logging.info("%d input file(s) on the Beam %s, %s output: %s", len(input_files), runner,
                 plan.mode, ", ".join(plan.outputs[:3]) + (", ..." if len(plan.outputs) > 3
                                                           else ""))
    summary = beam_pipeline.run(input_files, plan, options, pipeline_options, wall_start)
    _warn_about_truncation(summary)
    _log_summary(summary, plan.summary_path)
    return summary


def _create(input_files, plan, options, num_workers, progress_interval_seconds, start,
            cpu_start):
    resources = _resources(options)
    if num_workers is None:
        num_workers = default_num_workers()
    if num_workers < 1:
        raise errors.UserInputError(f"--num_workers={num_workers}: expected at least 1")
    num_workers = min(num_workers, len(input_files))
    logging.info("%d input file(s), %d worker(s), %s output: %s", len(input_files),
                 num_workers, plan.mode, ", ".join(plan.outputs[:3])
                 + (", ..." if len(plan.outputs) > 3 else ""))

    sizes = [tf.io.gfile.stat(path).length for path in input_files]
    # Biggest files first, so no worker is left with a big file at the end.
    tasks = sorted(enumerate(input_files), key=lambda task: -sizes[task[0]])
    tracker = progress_lib.Progress(sizes, progress_interval_seconds)
    file_stats = [None] * len(input_files)
    with outputs.OutputWriter(plan) as writer, \
            workers.run(tasks, options, num_workers, resources) as pool:
        for event in pool.events():
            if event[0] == "chunk":
                _, file_index, records, fraction, num_documents = event
                writer.write(file_index, records)
                tracker.chunk(file_index, len(records), fraction, num_documents)
            else:
                _, file_index, stats = event
                writer.finish(file_index)
                tracker.file_done(file_index)
                file_stats[file_index] = stats
                logging.info("done %s: %d documents, %d instances, %d bad bytes replaced",
                             stats.path, stats.documents, stats.instances, stats.replaced_bytes)
    elapsed = time.monotonic() - start
    summary = summary_lib.build(file_stats, writer.counts, options, num_workers, elapsed,
                                _cpu_seconds() - cpu_start, plan.summary_path)
    problem = summary_lib.one_class_problem(summary)
    if problem:
        for path in plan.outputs:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise errors.UserInputError(f"--input_file: {problem}")
    _warn_about_truncation(summary)
    summary_lib.write(plan.summary_path, summary)
    _log_summary(summary, plan.summary_path)
    return summary


def _warn_about_truncation(summary):
    """Very long lines lose nearly all their tokens to truncation at max_seq_length; say so."""
    for entry in summary["input_files"]:
        kept = entry["kept_token_fraction"]
        if kept is not None and kept < summary_lib.LOW_KEPT_TOKEN_FRACTION:
            logging.warning(
                "%s: only %.1f%% of its tokens (x dupe_factor) reached an instance; the rest "
                "were cut by truncation to --max_seq_length=%d. Sentences that long (one line "
                "per sentence is expected) are mostly dropped", entry["path"], 100 * kept,
                summary["features"]["max_seq_length"])


def _cpu_seconds():
    """User + system CPU time of this process and of its finished (joined) worker processes."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _log_summary(summary, summary_path):
    order = summary["sentence_order"]
    masking = summary["masking"]
    masked = max(masking["replaced_by_mask"] + masking["kept"] + masking["replaced_by_random"], 1)
    logging.info(
        "wrote %d instances (%d tokens, %.1f instances/s); masked fraction %.4f "
        "([MASK] %.1f%%, kept %.1f%%, random %.1f%%); sentence-order label 1: %.1f%% "
        "(%d swapped, %d from another document, %d in order); %d input bytes replaced "
        "(not UTF-8); summary: %s",
        summary["instances"], summary["tokens"], summary["instances_per_second"] or 0.0,
        summary["masked_fraction"], 100.0 * masking["replaced_by_mask"] / masked,
        100.0 * masking["kept"] / masked, 100.0 * masking["replaced_by_random"] / masked,
        100.0 * order["label_1_fraction"], order["swapped"], order["random_document"],
        order["in_order"], summary["input"]["replaced_bytes"], summary_path)
