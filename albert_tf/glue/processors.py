"""GLUE processors: the official TSV files read into `InputExample`s exactly as the original.

Each processor knows its task's directory under `--data_dir`, its file names, the columns of
each split and its label list. Files are read with
`csv.reader(delimiter="\\t", quotechar=None)`, i.e. without quote handling, as the original
does; the header row is skipped except in CoLA's train and dev files, which have none.

Unlike the original, which failed with a bare `IndexError` or `KeyError` deep inside feature
conversion, a row with too few columns, an unknown label or a non-numeric or non-finite
(NaN, inf) STS-B score raises `GlueDataError` naming the file, the line and the column (both
1-based); bytes that are not UTF-8 are named with the line and byte offset. QQP's train and dev
files hold rows broken by unquoted newlines; those are skipped as the original does, but
counted (`processor.skipped_rows`) and logged. The diagnostic set `ax` (test only, MNLI
labels) is registered, which the original forgot.
"""

import csv
import dataclasses
import io
import math
import os
from typing import Optional, Union

from absl import logging

from albert_tf import errors
from albert_tf.files import input_files
from albert_tf.text import tokenization


class GlueDataError(errors.UserInputError):
    """A GLUE file or row the processors cannot read; the message names file, line and column."""


@dataclasses.dataclass
class InputExample:
    """One example: `text_b` is None for single-sentence tasks; `label` a string, or a float for sts-b."""

    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Union[str, float, None] = None


class DataProcessor:
    """Reads one task's train, dev and test files; subclasses give the layout."""

    task_dir = None
    train_file = "train.tsv"
    dev_file = "dev.tsv"
    test_file = "test.tsv"
    labels = ()
    # The task's identity beyond its files, in one place: a regression task (one float
    # output, squared-error loss), the evaluation metrics in the original's order
    # (`metrics.glue_metrics` adds eval_loss), and the one that picks model.ckpt-best.
    is_regression = False
    metric_names = ("eval_accuracy",)
    selection_metric = "eval_accuracy"

    def __init__(self, use_spm=True, do_lower_case=True):
        self.use_spm = use_spm
        self.do_lower_case = do_lower_case
        self.skipped_rows = {}

    def get_labels(self):
        return list(self.labels)

    def get_train_examples(self, data_dir):
        return self._examples(data_dir, self.train_file, "train")

    def get_dev_examples(self, data_dir):
        return self._examples(data_dir, self.dev_file, "dev")

    def get_test_examples(self, data_dir):
        return self._examples(data_dir, self.test_file, "test")

    def split_path(self, data_dir, split):
        """The file a split is read from (`split` is train, dev or test)."""
        name = {"train": self.train_file, "dev": self.dev_file, "test": self.test_file}[split]
        if name is None:
            raise GlueDataError(f"{type(self).__name__} has no {split} split")
        return os.path.join(data_dir, self.task_dir, name)

    def process_text(self, text):
        """The original's normalisation: spm `preprocess_text` (lower-cased on request) or unicode."""
        if self.use_spm:
            return tokenization.preprocess_text(text, lower=self.do_lower_case)
        return tokenization.convert_to_unicode(text)

    def _examples(self, data_dir, file_name, split):
        path = self.split_path(data_dir, split)
        if file_name is None or not os.path.exists(path):
            raise GlueDataError(f"{path}: {split} file of {self.task_dir} does not exist")
        examples = []
        for row in self._read_tsv(path):
            example = self._create_example(row, split)
            if example is not None:
                examples.append(example)
        skipped = self.skipped_rows.get(split, 0)
        if skipped:
            logging.warning("%s: skipped %d malformed rows (fewer columns than the layout needs)",
                            path, skipped)
        return examples

    def _read_tsv(self, path):
        """Yields `_Row`s: the fields with the file name and 1-based line number for errors."""
        text = input_files.read_text(path, f"{self.task_dir} file")
        lines = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar=None)
        for index, fields in enumerate(lines):
            yield _Row(path, lines.line_num, index, fields, self)

    def _create_example(self, row, split):
        """Returns an `InputExample` for one row, or None for a header row."""
        raise NotImplementedError


class _Row:
    """A TSV row that reads its columns with errors naming file, line and column."""

    def __init__(self, path, line, index, fields, processor):
        self.path = path
        self.line = line
        self.index = index
        self.fields = fields
        self._processor = processor

    def raw(self, column, what):
        position = column if column >= 0 else len(self.fields) + column
        if not 0 <= position < len(self.fields):
            wanted = column + 1 if column >= 0 else 1
            raise GlueDataError(
                f"{self.path}, line {self.line}, column {wanted}: {what} is missing; the row has "
                f"{len(self.fields)} tab-separated columns, the layout needs at least {wanted}")
        return self.fields[position]

    def text(self, column, what):
        return self._processor.process_text(self.raw(column, what))

    def label(self, column, labels):
        value = self.text(column, "label")
        if value not in labels:
            position = (column if column >= 0 else len(self.fields) + column) + 1
            raise GlueDataError(
                f"{self.path}, line {self.line}, column {position}: unknown label {value!r}, "
                f"expected one of {list(labels)}")
        return value

    def score(self, column):
        value = self.raw(column, "score")
        position = (column if column >= 0 else len(self.fields) + column) + 1
        try:
            score = float(value)
        except ValueError:
            raise GlueDataError(
                f"{self.path}, line {self.line}, column {position}: score {value!r} is not a number"
            ) from None
        if not math.isfinite(score):  # a NaN score would train and score as NaN
            raise GlueDataError(f"{self.path}, line {self.line}, column {position}: score "
                                f"{value!r} is not finite; expected a number (0 to 5 in STS-B)")
        return score


_NLI_LABELS = ("contradiction", "entailment", "neutral")
_BINARY_LABELS = ("0", "1")
_QNLI_LABELS = ("entailment", "not_entailment")


class MnliProcessor(DataProcessor):
    """MNLI matched: guid 0, premise 8, hypothesis 9, gold label last; test labels are a dummy."""

    task_dir = "MNLI"
    dev_file = "dev_matched.tsv"
    test_file = "test_matched.tsv"
    labels = _NLI_LABELS

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        guid, text_a, text_b = row.text(0, "guid"), row.text(8, "sentence1"), row.text(9, "sentence2")
        label = "contradiction" if split == "test" else row.label(-1, self.labels)
        return InputExample(guid, text_a, text_b, label)


class MisMnliProcessor(MnliProcessor):
    """MNLI mismatched dev and test; training uses MNLI's train.tsv."""

    dev_file = "dev_mismatched.tsv"
    test_file = "test_mismatched.tsv"


class AxProcessor(DataProcessor):
    """The GLUE diagnostic set (test only): index 0, sentence1 1, sentence2 2; MNLI's labels."""

    task_dir = "diagnostic"
    train_file = None
    dev_file = None
    test_file = "diagnostic.tsv"
    labels = _NLI_LABELS

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        return InputExample(row.text(0, "index"), row.text(1, "sentence1"),
                            row.text(2, "sentence2"), "contradiction")


class MrpcProcessor(DataProcessor):
    """MRPC: quality 0, #1 string 3, #2 string 4; guid `<split>-<row>`, test guid column 0."""

    task_dir = "MRPC"
    labels = _BINARY_LABELS
    metric_names = ("eval_accuracy", "f1")

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        text_a, text_b = row.text(3, "#1 String"), row.text(4, "#2 String")
        if split == "test":
            return InputExample(row.raw(0, "index"), text_a, text_b, "0")
        return InputExample(f"{split}-{row.index}", text_a, text_b, row.label(0, self.labels))


class ColaProcessor(DataProcessor):
    """CoLA: train/dev have no header (sentence 3, label 1); test has one (index 0, sentence 1)."""

    task_dir = "CoLA"
    labels = _BINARY_LABELS
    metric_names = ("matthew_corr", "eval_accuracy")
    selection_metric = "matthew_corr"

    def _create_example(self, row, split):
        if split == "test":
            if row.index == 0:
                return None
            return InputExample(row.raw(0, "index"), row.text(1, "sentence"), None, "0")
        return InputExample(f"{split}-{row.index}", row.text(3, "sentence"), None,
                            row.label(1, self.labels))


class Sst2Processor(DataProcessor):
    """SST-2: sentence 0, label 1; test: index 0, sentence 1."""

    task_dir = "SST-2"
    labels = _BINARY_LABELS

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        if split == "test":
            return InputExample(row.text(0, "index"), row.text(1, "sentence"), None, "0")
        return InputExample(f"{split}-{row.index}", row.text(0, "sentence"), None,
                            row.label(1, self.labels))


class StsbProcessor(DataProcessor):
    """STS-B (regression): index 0, sentence1 7, sentence2 8, score last; one output."""

    task_dir = "STS-B"
    labels = (None,)
    is_regression = True
    metric_names = ("pearson", "spearman", "MSE")
    selection_metric = "pearson"

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        guid, text_a, text_b = row.text(0, "index"), row.text(7, "sentence1"), row.text(8, "sentence2")
        if split != "test":
            row.raw(9, "score")  # the score is the last of at least 10 columns
        label = 0.0 if split == "test" else row.score(-1)
        return InputExample(guid, text_a, text_b, label)


class QqpProcessor(DataProcessor):
    """QQP: id 0, question1 3, question2 4, label 5; test: id 0, question1 1, question2 2.

    Rows of train/dev with fewer than 6 columns (questions broken by a newline) are skipped and
    counted, as the original skips them.
    """

    task_dir = "QQP"
    labels = _BINARY_LABELS
    metric_names = ("eval_accuracy", "f1")

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        guid = row.raw(0, "id")
        if split == "test":
            return InputExample(guid, row.text(1, "question1"), row.text(2, "question2"), "0")
        if len(row.fields) < 6:
            self.skipped_rows[split] = self.skipped_rows.get(split, 0) + 1
            return None
        return InputExample(guid, row.text(3, "question1"), row.text(4, "question2"),
                            row.label(5, self.labels))


class _PairProcessor(DataProcessor):
    """index 0, first text 1, second text 2, label last (QNLI, RTE, WNLI)."""

    test_label = None

    def _create_example(self, row, split):
        if row.index == 0:
            return None
        guid, text_a, text_b = row.text(0, "index"), row.text(1, "sentence1"), row.text(2, "sentence2")
        label = self.test_label if split == "test" else row.label(-1, self.labels)
        return InputExample(guid, text_a, text_b, label)


class QnliProcessor(_PairProcessor):
    task_dir = "QNLI"
    labels = _QNLI_LABELS
    test_label = "entailment"


class RteProcessor(_PairProcessor):
    task_dir = "RTE"
    labels = _QNLI_LABELS
    test_label = "entailment"


class WnliProcessor(_PairProcessor):
    task_dir = "WNLI"
    labels = _BINARY_LABELS
    test_label = "0"


PROCESSORS = {
    "cola": ColaProcessor,
    "mnli": MnliProcessor,
    "mismnli": MisMnliProcessor,
    "mrpc": MrpcProcessor,
    "qqp": QqpProcessor,
    "qnli": QnliProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "wnli": WnliProcessor,
    "ax": AxProcessor,
}


def processor_class(task_name):
    """The processor class of `--task_name` (case-insensitive, as the original lower-cases it):
    its files, labels, regression or not, and metrics."""
    key = (task_name or "").lower()
    if key not in PROCESSORS:
        raise GlueDataError(f"--task_name={task_name!r} is not a GLUE task; valid names: "
                            f"{', '.join(sorted(PROCESSORS))}")
    return PROCESSORS[key]


def get_processor(task_name, use_spm=True, do_lower_case=True):
    """The processor of `--task_name`, ready to read its files."""
    return processor_class(task_name)(use_spm=use_spm, do_lower_case=do_lower_case)
