"""CoNLL-style tagging files: one `token tag` per line, a blank line between sentences.

Extra middle columns (CoNLL-2003 has four) are ignored: the first column is the token, the last
its tag. Every token line of a file must have the same number of columns: a line with another
count is a file in another layout (a sentence on one line, a stray extra column) whose "tags"
would be words, so it is refused with its file and line. Columns are split on whitespace; in
a line with a tab they are the tab-separated fields, and a field holding several words (a
sentence on one line, `w1 w2 w3<TAB>T1 T2 T3`) is refused too, even when every line has the
same length and would otherwise read as a token and its tag. `-DOCSTART-` lines are skipped.

JSON Lines files (`.jsonl`) hold one sentence a line, `{"tokens": [...], "tags": [...]}` (the
keys set by `Columns`, from `--tokens_column_name` / `--tags_column_name`), as Hugging Face's
`run_ner.py` reads; a missing key, a token or tag that is not a string, or lists of different
lengths are refused with the file and line. A split is `<data_dir>/{train,dev,test}.txt`, or
`.jsonl` when there is no `.txt`.
"""

import dataclasses
import json
import os

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import input_files, io_utils

SPLIT_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
JSON_LINES_EXTENSION = ".jsonl"


class TaggingDataError(errors.UserInputError):
    """A tagging file that is missing or not in the `token tag` layout; names file and line."""


@dataclasses.dataclass(frozen=True)
class Sentence:
    words: tuple
    tags: tuple
    line: int  # of its first token, for messages


@dataclasses.dataclass(frozen=True)
class Columns:
    """The keys of a JSON Lines sentence: its words and their tags."""

    tokens: str = "tokens"
    tags: str = "tags"


DEFAULT_COLUMNS = Columns()

def split_path(data_dir, split):
    """`<split>.txt`, or `<split>.jsonl` when only that exists."""
    path = os.path.join(data_dir, SPLIT_FILES[split])
    json_lines = os.path.splitext(path)[0] + JSON_LINES_EXTENSION
    if not tf.io.gfile.exists(path) and tf.io.gfile.exists(json_lines):
        return json_lines
    return path


def read_sentences(path, columns=DEFAULT_COLUMNS):
    """The sentences of one file, in order: JSON Lines by the `.jsonl` extension, else CoNLL."""
    if not tf.io.gfile.exists(path):
        raise TaggingDataError(f"{path}: tagging file not found (expected `token tag` lines, "
                               "or JSON Lines of tokens and tags)")
    if path.endswith(JSON_LINES_EXTENSION):
        return _read_json_lines(path, columns)
    sentences, words, tags, first = [], [], [], None
    layout = None  # (column count, line that set it)
    for number, line in enumerate(input_files.read_text(path, "tagging file").splitlines(),
                                  start=1):
        columns = line.split()
        if columns and columns[0] == "-DOCSTART-":
            continue
        if not columns:
            if words:
                sentences.append(Sentence(tuple(words), tuple(tags), first))
            words, tags = [], []
            continue
        if len(columns) < 2:
            raise TaggingDataError(f"{path}, line {number}: expected 'token tag', got "
                                   f"{line.rstrip()!r}")
        _check_one_word_per_field(line, path, number)
        if layout is None:
            layout = (len(columns), number)
        elif len(columns) != layout[0]:
            raise TaggingDataError(
                f"{path}, line {number}: {len(columns)} columns, but line {layout[1]} has "
                f"{layout[0]}; expected one 'token tag' per line (the same columns on every "
                f"line, token first, tag last) and a blank line between sentences, got "
                f"{line.rstrip()[:80]!r}")
        if not words:
            first = number
        words.append(columns[0])
        tags.append(columns[-1])
    if words:
        sentences.append(Sentence(tuple(words), tuple(tags), first))
    if not sentences:
        raise TaggingDataError(f"{path}: no sentences (expected `token tag` lines, a blank line "
                               "between sentences)")
    return sentences


def _read_json_lines(path, columns):
    sentences = []
    text = input_files.read_text(path, "tagging file")
    for number, row in input_files.json_object_lines(path, text, TaggingDataError):
        words = _string_list(row, columns.tokens, "--tokens_column_name", path, number)
        tags = _string_list(row, columns.tags, "--tags_column_name", path, number)
        if len(words) != len(tags):
            raise TaggingDataError(f"{path}, line {number}: {len(words)} tokens but {len(tags)} "
                                   "tags; expected one tag per token")
        if words:
            sentences.append(Sentence(tuple(words), tuple(tags), number))
    if not sentences:
        raise TaggingDataError(f"{path}: no sentences (expected one JSON object a line with "
                               f"{columns.tokens!r} and {columns.tags!r} lists)")
    return sentences


def _string_list(row, key, flag, path, number):
    if key not in row:
        raise TaggingDataError(f"{path}, line {number}: no key {key!r}; the object has "
                               f"{', '.join(map(repr, row))}; set {flag}")
    values = row[key]
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() and
                                               len(v.split()) == 1 for v in values):
        raise TaggingDataError(f"{path}, line {number}, key {key!r}: expected a list of "
                               f"single words (strings), got {json.dumps(values)[:80]}")
    return values


def _check_one_word_per_field(line, path, number):
    """Refuses a tab-separated line whose token or tag field holds several words."""
    if "\t" not in line:
        return
    fields = [field.strip() for field in line.split("\t") if field.strip()]
    crowded = next((field for field in fields if len(field.split()) > 1), None)
    if crowded is not None:
        raise TaggingDataError(
            f"{path}, line {number}: the tab-separated column {crowded[:60]!r} holds "
            f"{len(crowded.split())} words; expected one 'token tag' per line (one word in the "
            f"token column, one tag in the tag column) and a blank line between sentences, not "
            f"a sentence per line")


def label_list(data_dir, columns=DEFAULT_COLUMNS):
    """Every tag of the splits present, sorted: the label ids of the model's outputs."""
    tags = set()
    for split in SPLIT_FILES:
        path = split_path(data_dir, split)
        if tf.io.gfile.exists(path):
            tags.update(tag for sentence in read_sentences(path, columns)
                        for tag in sentence.tags)
    if not tags:
        raise TaggingDataError(f"{data_dir}: none of {', '.join(SPLIT_FILES.values())} (or "
                               f"their {JSON_LINES_EXTENSION} versions) found")
    return sorted(tags)


def write_label_file(path, labels):
    """Writes the label list beside the checkpoints (`labels.txt`), or checks the one there.

    Output i of a tagging head means the i-th label of the list it was trained with; a data
    set whose tags changed (one renamed, one added in test.txt) gives another sorted list, and
    the old checkpoints would name every prediction with the wrong tag. Refused, naming both.
    """
    labels = list(labels)
    if tf.io.gfile.exists(path):
        stored = input_files.read_text(path, "label file").split()
        if stored != labels:
            added = sorted(set(labels) - set(stored))
            removed = sorted(set(stored) - set(labels))
            change = (f"added {added}, removed {removed}" if added or removed
                      else "the same tags in another order")
            raise TaggingDataError(
                f"{path}: this output directory's checkpoints were trained with the labels "
                f"{stored}, the data now gives {labels} ({change}); use the data they were "
                f"trained on, or another --output_dir")
        return path
    io_utils.atomic_write_text(path, "\n".join(labels) + "\n")
    return path

