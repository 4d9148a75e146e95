"""The run summary (`<first output>.summary.json`) and reading instance counts back.

Training needs the number of instances to turn epochs into steps; `count_instances` gets it
from the summaries beside the TFRecord files (or, for files no summary lists, by counting
TFRecord frames, which reads only the 12-byte frame headers).
"""

import dataclasses
import json
import os

import tensorflow as tf

from albert_tf.files import io_utils
from albert_tf.pretraining import file_patterns
from albert_tf.pretraining import outputs as outputs_lib
from albert_tf.pretraining import records


# With fewer instances a missing class can be chance; with this many it is the data.
MIN_INSTANCES_FOR_CLASS_CHECK = 50


def one_class_problem(summary):
    """A message when every sentence-order (or next-sentence) label is the same, else None.

    Training on such data learns a constant: all pairs of real consecutive sentences are
    missing when every document is one sentence (a blank line after each line) or when
    --max_seq_length leaves no room for two of the corpus's sentences."""
    order = summary["sentence_order"]
    instances = summary["instances"]
    if instances < MIN_INSTANCES_FOR_CLASS_CHECK or 0 < order["label_1"] < instances:
        return None
    label = 1 if order["label_1"] else 0
    return (f"all {instances} instances have sentence-order label {label} "
            f"({order['in_order']} in order, {order['swapped']} swapped, "
            f"{order['random_document']} from another document), so the sentence-order task "
            f"would learn a constant. Expected one sentence per line and a blank line between "
            f"documents of several sentences, and --max_seq_length="
            f"{summary['features']['max_seq_length']} large enough for two of them; nothing "
            f"was written")


def build(file_stats, output_counts, options, num_workers, elapsed_seconds, cpu_seconds,
          summary_path, runner="local"):
    """The summary dict: totals first, then per input file and per output file.
    `num_workers` is None on a Beam runner (the runner decides)."""
    def total(name):
        return sum(getattr(stats, name) for stats in file_stats)

    def masking_total(name):
        return sum(stats.masking[name] for stats in file_stats)

    def masking_histogram(name):
        counts = [sum(stats.masking[name][n] for stats in file_stats)
                  for n in range(1, options.ngram + 1)]
        return {str(n): count for n, count in enumerate(counts, 1)}

    instances = total("instances")
    tokens = total("tokens")
    predictions = total("predictions")
    kinds = [sum(stats.pair_kinds[k] for stats in file_stats) for k in range(3)]
    summary_dir = os.path.dirname(summary_path)
    return {
        "instances": instances,
        "tokens": tokens,
        "predictions": predictions,
        "masked_fraction": predictions / tokens if tokens else 0.0,
        "sentence_order": {
            "label_1": kinds[1] + kinds[2],
            "label_1_fraction": (kinds[1] + kinds[2]) / instances if instances else 0.0,
            "in_order": kinds[0],
            "swapped": kinds[1],
            "random_document": kinds[2],
        },
        "masking": {
            "replaced_by_mask": masking_total("replaced_by_mask"),
            "kept": masking_total("kept"),
            "replaced_by_random": masking_total("replaced_by_random"),
            "permuted": masking_total("permuted"),
            "sampled_ngram_lengths": masking_histogram("sampled_ngrams"),
            "masked_ngram_lengths": masking_histogram("masked_ngrams"),
        },
        "features": {
            "max_seq_length": options.max_seq_length,
            "max_predictions_per_seq": options.masked_lm_length,
        },
        "input": {
            "files": len(file_stats),
            "bytes": total("input_bytes"),
            "lines": total("lines"),
            "replaced_bytes": total("replaced_bytes"),
            "documents": total("documents"),
            "sentences": total("sentences"),
            "tokens": total("document_tokens"),
            "kept_token_fraction": kept_token_fraction(tokens, instances,
                                                       total("document_tokens"),
                                                       options.dupe_factor),
        },
        "output_files": {os.path.relpath(path, summary_dir or "."): count
                         for path, count in sorted(output_counts.items())},
        "options": dataclasses.asdict(options),
        "runner": runner,
        "num_workers": num_workers,
        "elapsed_seconds": round(elapsed_seconds, 3),
        # CPU time of the run and its workers: on a shared machine, instances per CPU-second is
        # the steadier speed figure.
        "cpu_seconds": round(cpu_seconds, 3),
        "instances_per_second": round(instances / elapsed_seconds, 1) if elapsed_seconds else None,
        "input_files": [_file_entry(stats, options.dupe_factor) for stats in file_stats],
    }


# Below this share of input tokens reaching an instance, a file is mostly lost to truncation.
LOW_KEPT_TOKEN_FRACTION = 0.5
_SPECIAL_TOKENS_PER_INSTANCE = 3  # [CLS] A [SEP] B [SEP]


def kept_token_fraction(instance_tokens, instances, document_tokens, dupe_factor):
    """Share of the input's tokens (once per dupe pass) that reached an instance; about 1 for
    ordinary text (a B segment from another document can push it slightly above)."""
    if not document_tokens:
        return None
    real = instance_tokens - _SPECIAL_TOKENS_PER_INSTANCE * instances
    return round(real / (document_tokens * dupe_factor), 4)


def _file_entry(stats, dupe_factor):
    entry = dataclasses.asdict(stats)
    entry.pop("masking")
    entry["kept_token_fraction"] = kept_token_fraction(stats.tokens, stats.instances,
                                                       stats.document_tokens, dupe_factor)
    return entry


def write(path, summary):
    io_utils.atomic_write_text(path, json.dumps(summary, indent=2, sort_keys=False) + "\n")


def _summaries_in(directory):
    """{absolute TFRecord path: instances} from every summary file in `directory`."""
    counts = {}
    for path in tf.io.gfile.glob(os.path.join(directory or ".", "*" + outputs_lib.SUMMARY_SUFFIX)):
        with tf.io.gfile.GFile(path) as reader:
            summary = json.load(reader)
        for name, count in summary.get("output_files", {}).items():
            counts[os.path.normpath(os.path.join(os.path.dirname(path), name))] = count
    return counts


def count_instances(input_patterns):
    """Total instances in the TFRecord files matching `input_patterns` (comma-separated globs)."""
    files = file_patterns.expand(input_patterns, "input_file",
                                 exclude_suffixes=(outputs_lib.SUMMARY_SUFFIX,))
    known = {}
    total = 0
    for path in files:
        directory = os.path.dirname(path)
        if directory not in known:
            known[directory] = _summaries_in(directory)
        count = known[directory].get(os.path.normpath(path))
        if count is None:
            with tf.io.gfile.GFile(path, "rb") as reader:
                count = records.count_frames(reader)
        total += count
    return total
