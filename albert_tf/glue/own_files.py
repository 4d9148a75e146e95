"""A user's own labelled files as a classification or regression task: CSV, TSV or JSON Lines.

`run_classifier.py --train_file=… --validation_file=… --test_file=…` reads them instead of a
GLUE task's directory. The format is chosen by the extension: `.csv` (a header row, fields
quoted as Python's `csv` module and spreadsheets write them), `.tsv` (a header row, tab
separated, no quoting, as GLUE's files), `.jsonl` / `.json` (JSON Lines: one object a line).
`--text_column_names` names one column (single sentences) or two (pairs), and
`--label_column_name` the label. Labels are the training file's distinct values, sorted as
strings, unless `--label_names` gives them; `--do_regression` reads numeric labels instead and
scores Pearson, Spearman and MSE as STS-B.

Every row is checked before any training: a missing column, an empty text, a ragged CSV row, a
label the label list lacks or a label that is not a finite number under `--do_regression`
raises `OwnDataError` naming the file, the line and the column.
"""

import csv
import dataclasses
import io
import math
import os
from typing import Optional, Tuple

from albert_tf.files import input_files, io_utils
from albert_tf.glue import processors

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
LABEL_NAMES_FILE = "labels.txt"  # as run_tagging.py and import_from_hf.py write it
SPLIT_FLAGS = {"train": "--train_file", "dev": "--validation_file", "test": "--test_file"}


class OwnDataError(processors.GlueDataError):
    """A file of the user's own task that cannot be read; the message names file, line, column."""


@dataclasses.dataclass(frozen=True)
class OwnData:
    """Where the task's files are and how their columns are read (the file flags)."""

    train_file: Optional[str]
    validation_file: Optional[str]
    test_file: Optional[str]
    text_columns: Tuple[str, ...] = ("text",)
    label_column: str = "label"
    label_names: Optional[Tuple[str, ...]] = None
    regression: bool = False

    def path(self, split):
        return {"train": self.train_file, "dev": self.validation_file,
                "test": self.test_file}[split]


def file_format(path):
    """csv, tsv or jsonl, by the file's extension."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise OwnDataError(f"{path}: unknown extension {extension or '(none)'!r}; expected one "
                           f"of {', '.join(sorted(FORMATS))} (CSV with a header row, TSV with "
                           "a header row, JSON Lines)")
    return FORMATS[extension]


def read_rows(path):
    """Yields (line number, {column: value}) for each data row of `path`."""
    kind = file_format(path)
    text = input_files.read_text(path, "data file")
    if kind == "jsonl":
        yield from input_files.json_object_lines(path, text, OwnDataError)
        return
    reader = csv.reader(io.StringIO(text, newline=""),
                        **({"delimiter": "\t", "quotechar": None} if kind == "tsv" else {}))
    header = next(reader, None)
    if not header:
        raise OwnDataError(f"{path}, line 1: no header row; the first row must name the columns")
    for fields in reader:
        if not fields:
            continue
        if len(fields) != len(header):
            raise OwnDataError(f"{path}, line {reader.line_num}: {len(fields)} fields, the header "
                               f"has {len(header)} ({', '.join(header)}); quote fields that hold "
                               "the delimiter")
        yield reader.line_num, dict(zip(header, fields))


def _value(path, line, row, column, what):
    if column not in row:
        raise OwnDataError(f"{path}, line {line}: no column {column!r} ({what}); the row has "
                           f"{', '.join(map(repr, row))}; set {_flag_of(what)}")
    value = row[column]
    return "" if value is None else str(value)


def _flag_of(what):
    return "--label_column_name" if what == "label" else "--text_column_names"


def training_labels(data):
    """The label list: `--label_names`, else the training file's distinct labels, sorted."""
    if data.regression:
        return (None,)
    if data.label_names:
        return tuple(data.label_names)
    if not data.train_file:
        raise OwnDataError("no labels known: give --label_names or --train_file")
    return tuple(sorted({_value(data.train_file, line, row, data.label_column, "label")
                         for line, row in read_rows(data.train_file)}))


def write_label_names(output_dir, labels):
    """labels.txt beside the checkpoints: a later --do_eval or --do_predict run reads it."""
    os.makedirs(output_dir, exist_ok=True)
    io_utils.atomic_write_text(os.path.join(output_dir, LABEL_NAMES_FILE),
                               "".join(f"{label}\n" for label in labels))


def read_label_names(output_dir):
    path = os.path.join(output_dir, LABEL_NAMES_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as reader:
        return tuple(line.rstrip("\n") for line in reader)


def processor_class(data, task_name, labels):
    """A `processors.DataProcessor` subclass reading `data`'s files as the task `task_name`."""

    class OwnFilesProcessor(processors.DataProcessor):
        task_dir = task_name
        is_regression = data.regression
        metric_names = ("pearson", "spearman", "MSE") if data.regression else ("eval_accuracy",)
        selection_metric = "pearson" if data.regression else "eval_accuracy"

        def split_path(self, data_dir, split):
            path = data.path(split)
            if path is None:
                raise OwnDataError(f"no {split} file: give {SPLIT_FLAGS[split]}")
            return path

        def _examples(self, data_dir, file_name, split):
            path = self.split_path(data_dir, split)
            return [self._example(path, line, row, split, index)
                    for index, (line, row) in enumerate(read_rows(path))]

        def _example(self, path, line, row, split, index):
            texts = []
            for column in data.text_columns:
                value = _value(path, line, row, column, "text")
                if not value.strip():
                    raise OwnDataError(f"{path}, line {line}, column {column!r}: empty text")
                texts.append(self.process_text(value))
            text_b = texts[1] if len(texts) > 1 else None
            if split == "test":
                return processors.InputExample(str(index), texts[0], text_b, labels[0] or 0.0)
            return processors.InputExample(f"{split}-{index}", texts[0], text_b,
                                           self._label(path, line, row))

        def _label(self, path, line, row):
            value = _value(path, line, row, data.label_column, "label")
            where = f"{path}, line {line}, column {data.label_column!r}"
            if data.regression:
                try:
                    score = float(value)
                except ValueError:
                    raise OwnDataError(f"{where}: label {value!r} is not a number, and "
                                       "--do_regression reads numeric labels") from None
                if not math.isfinite(score):
                    raise OwnDataError(f"{where}: label {value!r} is not a finite number")
                return score
            if value not in labels:
                raise OwnDataError(
                    f"{where}: label {value!r} is not one of the labels {list(labels)} (the "
                    "training file's, or --label_names); list every label with --label_names, "
                    "or use --do_regression for numeric scores")
            return value

    OwnFilesProcessor.labels = labels
    return OwnFilesProcessor


def register(data, task_name, labels):
    """Registers the task under `task_name`, so the GLUE flow (features, metrics, model
    selection, export) treats it as one of its own; refuses a GLUE task's name."""
    key = task_name.lower()
    if key in processors.PROCESSORS and not getattr(processors.PROCESSORS[key], "own_files",
                                                    False):
        raise OwnDataError(f"--task_name={task_name!r} is a GLUE task; with --train_file and "
                           "the other file flags give a name of your own (default: own_data)")
    cls = processor_class(data, key, labels)
    cls.own_files = True
    processors.PROCESSORS[key] = cls
    return cls


def check_files(data, splits):
    """Reads every row of the splits the run uses, so bad input stops the run before training."""
    labels = training_labels(data)
    cls = processor_class(data, "own_data", labels)
    processor = cls(use_spm=False)
    for split in splits:
        path = data.path(split)
        if path is None:
            raise OwnDataError(f"no {split} file: give {SPLIT_FLAGS[split]}")
        if not os.path.exists(path):
            raise OwnDataError(f"{path}: {SPLIT_FLAGS[split]} does not exist")
        if not processor._examples(None, None, split):
            raise OwnDataError(f"{path}: no rows (expected a header row, then one example a "
                               "line)")
    return labels
