"""Preset folders: what `from_preset` reads and `save_to_preset` writes.

A preset is a folder in the layout the scripts already read:

    albert_config.json       the model's `AlbertConfig`
    *.model                  the SentencePiece model (30k-clean.model, spiece.model, ...)
    model.ckpt-N / -best     a checkpoint in the original layout (`checkpoints`)
    text_classifier.json     label names, max_seq_length, do_lower_case of a trained
                             classifier: written by `save_to_preset` and by a
                             `run_classifier.py --do_train` run (`write_run_files`)
    labels.txt               else the label names, one a line, as `run_classifier.py` on your
                             own files and `import_from_hf.py` write them
    masked_lm.json           max_seq_length and do_lower_case of a masked LM's
                             `save_to_preset` (its head is in the checkpoint, `cls/predictions`)

A published tarball, `import_from_hf.py`'s output and a `run_classifier.py` output folder (which
carries its config, a copy of its SentencePiece model and text_classifier.json beside the
checkpoints) are all presets; of several checkpoints `model.ckpt-best` is taken, else the one the
folder's `checkpoint` state file names.
"""

import dataclasses
import json
import os
import shutil
import uuid

import tensorflow as tf

from albert_tf import checkpoints, errors
from albert_tf.config import AlbertConfig
from albert_tf.files import io_utils

CONFIG_NAME = "albert_config.json"
SPM_NAME = "30k-clean.model"  # the published tarballs' name, written by save_to_preset
TASK_NAME = "text_classifier.json"
MASKED_LM_NAME = "masked_lm.json"
LABELS_NAME = "labels.txt"


class PresetError(errors.UserInputError):
    """A folder that is not a usable preset."""


@dataclasses.dataclass
class Preset:
    """The files of one preset folder, found and checked."""

    folder: str
    config: AlbertConfig
    spm_model_file: str
    checkpoint: str
    task: dict  # the task file's fields ({} when the folder has none)


def _spm_model_file(folder):
    models = sorted(name for name in os.listdir(folder) if name.endswith(".model"))
    if SPM_NAME in models:
        return os.path.join(folder, SPM_NAME)
    if len(models) == 1:
        return os.path.join(folder, models[0])
    if not models:
        raise PresetError(f"{folder}: no SentencePiece model (*.model) in the preset folder; "
                          f"copy the one the checkpoint was trained with beside it")
    raise PresetError(f"{folder}: several SentencePiece models {models}; keep the one the "
                      f"checkpoint was trained with, or name it {SPM_NAME}")


def _checkpoint(folder):
    best = os.path.join(folder, checkpoints.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + checkpoints.INDEX_SUFFIX):
        return best
    return checkpoints.resolve_checkpoint(folder)


def _read_json(path):
    with open(path, encoding="utf-8") as reader:
        try:
            return json.load(reader)
        except json.JSONDecodeError as error:
            raise PresetError(f"{path}: malformed JSON at line {error.lineno}, column "
                              f"{error.colno}: {error.msg}") from error


def _task(folder):
    path = os.path.join(folder, TASK_NAME)
    if not os.path.exists(path):
        return _label_names_of_a_run(folder)
    task = _read_json(path)
    names = task.get("label_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise PresetError(f"{path}: 'label_names' must be a non-empty list of strings, got "
                          f"{names!r}")
    return task


def _masked_lm_task(folder):
    """masked_lm.json's max_seq_length and do_lower_case ({} when the folder has none)."""
    path = os.path.join(folder, MASKED_LM_NAME)
    if not os.path.exists(path):
        return {}
    task = _read_json(path)
    length = task.get("max_seq_length", 1) if isinstance(task, dict) else None
    if (not isinstance(length, int) or isinstance(length, bool) or length < 1
            or not isinstance(task.get("do_lower_case", True), bool)):
        raise PresetError(f"{path}: expected {{\"max_seq_length\": a positive integer, "
                          f"\"do_lower_case\": true or false}}, got {task!r}")
    return task


TASK_READERS = {TASK_NAME: _task, MASKED_LM_NAME: _masked_lm_task}


def _label_names_of_a_run(folder):
    """labels.txt, one label a line, as `run_classifier.py` on your own files and
    `import_from_hf.py` (a classifier's id2label) write it: the head's label names."""
    path = os.path.join(folder, LABELS_NAME)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as reader:
        names = [line.rstrip("\n") for line in reader if line.strip()]
    return {"label_names": names} if names else {}


def read_preset(folder, task_name=TASK_NAME):
    """The `Preset` of `folder` with the fields of its task file `task_name` (TASK_READERS), or
    a PresetError naming the file that is missing or wrong."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise PresetError(f"{folder}: not a folder (a preset is a folder holding "
                          f"{CONFIG_NAME}, a SentencePiece model and a checkpoint)")
    config_path = os.path.join(folder, CONFIG_NAME)
    if not os.path.exists(config_path):
        raise PresetError(f"{config_path}: missing; a preset folder holds the model's config "
                          f"under this name")
    return Preset(folder, AlbertConfig.from_json_file(config_path), _spm_model_file(folder),
                  _checkpoint(folder), TASK_READERS[task_name](folder))


def write_preset(folder, config, spm_model_file, variables_by_name, task, step=0,
                 task_name=TASK_NAME):
    """Writes a preset folder whole or not at all: into a temporary folder beside it, renamed
    when complete. `variables_by_name` is a model's `checkpoint_variables()`; the checkpoint is
    `model.ckpt-<step>` with `global_step`, as a training run writes it; `task` goes to the
    task file `task_name`."""
    folder = os.fspath(folder)
    if os.path.exists(folder) and (not os.path.isdir(folder) or os.listdir(folder)):
        raise PresetError(f"{folder}: exists and is not an empty folder; save_to_preset "
                          f"writes a new folder")
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    temp = os.path.join(parent, f".{os.path.basename(folder)}{io_utils.TEMP_MARKER}"
                                f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.makedirs(temp)
        config.to_json_file(os.path.join(temp, CONFIG_NAME))
        shutil.copyfile(spm_model_file, os.path.join(temp, SPM_NAME))
        tensors = dict(variables_by_name)
        tensors[checkpoints.GLOBAL_STEP] = int(step)
        checkpoints.write_checkpoint(os.path.join(temp, f"model.ckpt-{int(step)}"), tensors)
        io_utils.atomic_write_text(os.path.join(temp, task_name),
                                   json.dumps(task, indent=2, sort_keys=True) + "\n")
        if os.path.isdir(folder):
            os.rmdir(folder)  # empty, checked above
        os.rename(temp, folder)
    except BaseException as error:
        shutil.rmtree(temp, ignore_errors=True)
        io_utils.raise_if_disk_full(error, folder)
        raise
    return folder


def write_run_files(output_dir, spm_model_file, label_names, max_seq_length, do_lower_case):
    """Makes a fine-tuning output folder a preset: a copy of the run's SentencePiece model (under
    its own name) and text_classifier.json with the run's labels, length and casing, so
    `from_preset(output_dir)` tokenizes, truncates and names classes as the run did."""
    target = os.path.join(output_dir, os.path.basename(spm_model_file))
    if not (os.path.exists(target) and os.path.samefile(spm_model_file, target)):
        with io_utils.atomic_path(target) as temp:
            shutil.copyfile(spm_model_file, temp)
    io_utils.atomic_write_text(os.path.join(output_dir, TASK_NAME), json.dumps(
        {"label_names": [str(name) for name in label_names], "max_seq_length": int(max_seq_length),
         "do_lower_case": bool(do_lower_case)}, indent=2, sort_keys=True) + "\n")
