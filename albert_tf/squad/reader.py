"""Reads SQuAD v1.1 / v2.0 JSON (`data → paragraphs → context, qas`) into `SquadExample`s.

A file whose structure is wrong (no `data`, an article without `paragraphs`, a paragraph without
`context` or `qas`, a question without `id`/`question`) is rejected before anything is built,
with an error naming the file and the JSON path, and so is a question id used twice. Problems
with one training question (no answer, an `answer_start` that does not point at its `text`)
skip that question only; the skip is logged with its id and counted in the returned
`ReadReport`.
"""

import dataclasses
import json

from absl import logging

from albert_tf import errors
from albert_tf.files import input_files


class SquadFormatError(errors.UserInputError):
    """The SQuAD JSON does not have the official layout."""


@dataclasses.dataclass
class SquadExample:
    """One question on one paragraph. `start_position` is a character offset (−1: impossible)."""

    qas_id: str
    question_text: str
    paragraph_text: str
    orig_answer_text: str | None = None
    start_position: int | None = None
    is_impossible: bool = False


@dataclasses.dataclass
class ReadReport:
    """What was read, and which questions were skipped and why (qas id → reason)."""

    num_questions: int = 0
    skipped: dict = dataclasses.field(default_factory=dict)


def load_squad_json(input_file):
    """Returns the `data` list of a SQuAD file, naming the file if it is not SQuAD JSON."""
    text = input_files.read_text(input_file, "SQuAD file")
    try:
        dataset = json.loads(text)
    except json.JSONDecodeError as error:
        raise SquadFormatError(f"{input_file}: not valid JSON ({error})") from error
    if not isinstance(dataset, dict) or not isinstance(dataset.get("data"), list):
        raise SquadFormatError(
            f"{input_file}: expected a JSON object with a list under \"data\" "
            "(the official SQuAD layout: data → paragraphs → context, qas)")
    _check_layout(input_file, dataset["data"])
    return dataset["data"]


def _require(input_file, container, key, kind, where):
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, kind):
        expected = {list: "a list", str: "a string"}[kind]
        raise SquadFormatError(f"{input_file}: {where} has no \"{key}\" ({expected} expected)")
    return value


def _check_layout(input_file, articles):
    """Validates the whole structure first so a bad file never fails half-way through. Ids
    must be unique: predictions and scores are keyed by id, so two questions sharing one would
    collapse into one answer, scored against either's gold answers."""
    first_seen = {}
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(_require(input_file, article, "paragraphs", list,
                                               f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            _require(input_file, paragraph, "context", str, where)
            for q, qa in enumerate(_require(input_file, paragraph, "qas", list, where)):
                qas_id = _require(input_file, qa, "id", str, f"{where}.qas[{q}]")
                if qas_id in first_seen:
                    raise SquadFormatError(
                        f"{input_file}: {where}.qas[{q}]: question id {qas_id!r} is used again "
                        f"(first at {first_seen[qas_id]}); every question needs its own id")
                first_seen[qas_id] = f"{where}.qas[{q}]"
                _require(input_file, qa, "question", str, f"{where}.qas[{q}]")
                answers = qa.get("answers", [])
                if not isinstance(answers, list) or not all(
                        isinstance(x, dict) and isinstance(x.get("text"), str)
                        and isinstance(x.get("answer_start"), int) for x in answers):
                    raise SquadFormatError(
                        f"{input_file}: {where}.qas[{q}] (id {qa['id']}): \"answers\" must be "
                        "a list of {\"text\": string, \"answer_start\": int}")


def read_squad_examples(input_file, is_training):
    """Returns (examples, ReadReport).

    For training, an answerable question uses its first answer (the original raised if there
    was not exactly one; dev-style files list several) and an unanswerable one
    (`is_impossible`) gets start −1 and text "".
    """
    report = ReadReport()
    examples = []
    for article in load_squad_json(input_file):
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                report.num_questions += 1
                example = SquadExample(qas_id=qa["id"], question_text=qa["question"],
                                       paragraph_text=context)
                if is_training:
                    reason = _add_training_answer(example, qa)
                    if reason:
                        logging.warning("%s: skipping question %s: %s", input_file, qa["id"],
                                        reason)
                        report.skipped[qa["id"]] = reason
                        continue
                examples.append(example)
    if report.skipped:
        logging.warning("%s: skipped %d of %d questions", input_file, len(report.skipped),
                        report.num_questions)
    return examples, report


def _add_training_answer(example, qa):
    """Fills the answer fields; returns the reason the question cannot be used, or None."""
    example.is_impossible = bool(qa.get("is_impossible", False))
    if example.is_impossible:
        example.start_position, example.orig_answer_text = -1, ""
        return None
    answers = qa.get("answers", [])
    if not answers:
        return "no answer and not marked is_impossible"
    text, start = answers[0]["text"], answers[0]["answer_start"]
    if not text:
        return "empty answer text"
    found = example.paragraph_text[start:start + len(text)] if start >= 0 else None
    if found != text:
        return (f"answer_start {start} does not point at the answer text {text!r} "
                f"(the context there reads {found!r})")
    example.start_position, example.orig_answer_text = start, text
    return None


def check_version(input_file, flag_name, version_2_with_negative, training=False):
    """SQuAD v1.1 has no unanswerable question: scored without --version_2_with_negative, a
    v2.0 file's unanswerable questions would count as misses, so such a predict file is refused,
    naming the first one. A training file is only warned about: the original trains v1.1 heads
    on it too, pointing unanswerable questions at [CLS] as it does windows without the answer."""
    if version_2_with_negative or not input_file:
        return
    for article in load_squad_json(input_file):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa.get("is_impossible"):
                    message = (f"{flag_name}={input_file}: question {qa['id']} is unanswerable "
                               "(is_impossible), a SQuAD v2.0 file")
                    if training:
                        logging.warning("%s; the v1.1 heads learn to point such questions at "
                                        "[CLS] (as the original); pass --version_2_with_negative "
                                        "for the v2.0 model", message)
                        return
                    raise SquadFormatError(f"{message}; pass --version_2_with_negative")
