"""Reads RACE articles from `<data_dir>/RACE/<split>/<level>/`, in either layout users have.

The original reads only `all.txt` (one JSON article per line), but the official RACE download
has one JSON article per `*.txt` file, so users had to concatenate them first. Both are read
here: a level directory holding `all.txt` is read as the original's layout (its other `*.txt`
files, usually the per-article files it was built from, are then ignored); otherwise every
`*.txt` file in it is one article, in natural name order (`2.txt` before `10.txt`).
"""

import dataclasses
import json
import os
import re

from absl import logging
import tensorflow as tf

from albert_tf import errors
from albert_tf.files import input_files

SPLITS = ("train", "dev", "test")
LEVELS = ("middle", "high")
NUM_CHOICES = 4
ANSWER_LETTERS = "ABCD"
ALL_IN_ONE_FILE = "all.txt"
_REQUIRED_KEYS = ("id", "article", "questions", "options", "answers")


class RaceDataError(errors.UserInputError):
    """A RACE file or article that cannot be read; the message names the file and article."""


@dataclasses.dataclass(frozen=True)
class RaceArticle:
    """One validated article: parallel `questions`, `options` (4 each) and integer `labels`."""

    article_id: str
    level: str
    article: str
    questions: tuple
    options: tuple
    labels: tuple
    source: str


def levels_from_flags(high_only=False, middle_only=False):
    """The levels `--high_only` / `--middle_only` select (the original silently read nothing
    when both were set)."""
    if high_only and middle_only:
        raise errors.UserInputError("--high_only and --middle_only exclude each other; set at most one")
    if high_only:
        return ("high",)
    if middle_only:
        return ("middle",)
    return LEVELS


def level_files(data_dir, split, level):
    """The files of one level directory and their layout: ("all.txt", [path]) or
    ("per-article", [paths])."""
    if split not in SPLITS:
        raise ValueError(f"RACE split {split!r} is not one of {', '.join(SPLITS)}")
    directory = os.path.join(data_dir, "RACE", split, level)
    if not tf.io.gfile.isdir(directory):
        raise RaceDataError(
            f"{directory}: no such directory; expected `{ALL_IN_ONE_FILE}` (one JSON article per "
            f"line) or one JSON article per *.txt file there (--high_only / --middle_only read "
            f"one level only)")
    all_in_one = os.path.join(directory, ALL_IN_ONE_FILE)
    if tf.io.gfile.exists(all_in_one):
        return ALL_IN_ONE_FILE, [all_in_one]
    paths = sorted(tf.io.gfile.glob(os.path.join(directory, "*.txt")), key=_natural_key)
    if not paths:
        raise RaceDataError(
            f"{directory}: holds neither `{ALL_IN_ONE_FILE}` nor any *.txt article file")
    return "per-article", paths


def read_articles(data_dir, split, levels=LEVELS):
    """Yields every article of `split` for the given levels (middle first, as the original)."""
    for level in LEVELS:
        if level not in levels:
            continue
        layout, paths = level_files(data_dir, split, level)
        logging.info("RACE %s/%s: %d file(s) in the %s layout", split, level, len(paths), layout)
        for path in paths:
            text = input_files.read_text(path, "RACE file")
            if layout == ALL_IN_ONE_FILE:
                # Only "\n" ends a line, as the original's `for line in f`; str.splitlines would
                # also split at U+2028 or U+0085 inside an article.
                for line_number, line in enumerate(text.split("\n"), start=1):
                    if line.strip():
                        yield parse_article(line, level, f"{path} line {line_number}")
            else:
                yield parse_article(text, level, path)


def parse_article(text, level, where):
    """Parses and validates one JSON article; `where` ("file" or "file line N") prefixes errors."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise RaceDataError(f"{where}: malformed JSON: {error}") from error
    if not isinstance(data, dict):
        raise RaceDataError(f"{where}: expected a JSON object, got {type(data).__name__}")
    missing = [key for key in _REQUIRED_KEYS if key not in data]
    if missing:
        name = f" `{data['id']}`" if "id" in data else ""
        raise RaceDataError(f"{where}: article{name} lacks the key(s) {', '.join(missing)}")
    article_id = str(data["id"])
    prefix = f"{where}: article `{article_id}`"
    questions, options, answers = data["questions"], data["options"], data["answers"]
    if not isinstance(data["article"], str):
        raise RaceDataError(f"{prefix}: `article` must be a string")
    for key, value in (("questions", questions), ("options", options), ("answers", answers)):
        if not isinstance(value, list):
            raise RaceDataError(f"{prefix}: `{key}` must be a list, got {type(value).__name__}")
    if not len(answers) == len(questions) == len(options):
        raise RaceDataError(
            f"{prefix}: {len(questions)} questions, {len(options)} option lists and "
            f"{len(answers)} answers; expected the same number of each")
    labels = []
    for index, (question, choices, answer) in enumerate(zip(questions, options, answers)):
        if not isinstance(question, str):
            raise RaceDataError(f"{prefix}: question {index} must be a string")
        if (not isinstance(choices, list) or len(choices) != NUM_CHOICES
                or not all(isinstance(choice, str) for choice in choices)):
            raise RaceDataError(
                f"{prefix}: question {index} ({question!r}) has options {choices!r}; expected a "
                f"list of exactly {NUM_CHOICES} strings")
        if not isinstance(answer, str) or len(answer) != 1 or answer not in ANSWER_LETTERS:
            raise RaceDataError(
                f"{prefix}: question {index} ({question!r}) has answer {answer!r}; expected one "
                f"of {', '.join(ANSWER_LETTERS)}")
        labels.append(ord(answer) - ord("A"))
    return RaceArticle(
        article_id=article_id, level=level, article=data["article"], questions=tuple(questions),
        options=tuple(tuple(choices) for choices in options), labels=tuple(labels), source=where)


def _natural_key(path):
    return [int(part) if part.isdigit() else part
            for part in re.split(r"(\d+)", os.path.basename(path))]
