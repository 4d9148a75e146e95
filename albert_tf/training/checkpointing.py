"""Training checkpoints in the original layout: `model.ckpt-<step>` with the original names.

Each checkpoint holds the model (encoder + heads, names from `checkpoint_variables()`),
`global_step` (int64) and the optimizer slots `<name>/adam_m`, `<name>/adam_v`, so published
tools (Hugging Face `load_tf_weights_in_albert`, the original scripts) read it, and a restarted
run resumes with the same step, learning rate (a function of the step) and slots.

Writing is crash-safe: `albert_tf.checkpoints.write_checkpoint` writes the files atomically
(data, then index), and only then the `checkpoint` state file (TF's format, relative paths,
itself written atomically) names the new checkpoint: a killed run never leaves a half-written
checkpoint that is taken for the latest.
The newest `keep_checkpoint_max` are kept. Under multi-worker training every worker holds the
same values and only the chief writes (the output directory must be shared, e.g. on GCS, as the
original's model_dir).
"""

import collections
import os
import re

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import checkpoints, errors

CHECKPOINT_PREFIX = "model.ckpt"
_STEP_PATTERN = re.compile(r"model\.ckpt-(\d+)$")


def checkpoint_step(path):
    """The step in a `.../model.ckpt-<step>` path, or None (e.g. `model.ckpt-best`)."""
    match = _STEP_PATTERN.search(path)
    return int(match.group(1)) if match else None


def warm_start(variables_by_name, init_checkpoint, init_from_group0=False):
    """--init_checkpoint: load by name (heads may be missing); --init_from_group0 too."""
    report = checkpoints.load_into(variables_by_name, init_checkpoint,
                                   init_from_group0=init_from_group0)
    return report


class CheckpointManager:
    """Saves, prunes and restores `model.ckpt-<step>` in one directory."""

    def __init__(self, directory, variables_by_name, optimizer, keep_checkpoint_max=5,
                 is_chief=True):
        self.directory = directory
        self.variables_by_name = variables_by_name
        self.optimizer = optimizer
        self.keep_checkpoint_max = keep_checkpoint_max
        self.is_chief = is_chief

    def latest_checkpoint(self):
        return checkpoints.latest_checkpoint(self.directory)

    def _state_variables(self):
        """Model + slots: everything restored by name (global_step is handled apart)."""
        names = collections.OrderedDict(self.variables_by_name)
        names.update(self.optimizer.slot_variables())
        return names

    def values(self, step):
        values = collections.OrderedDict(
            (name, variable.numpy()) for name, variable in self.variables_by_name.items())
        values["global_step"] = np.int64(step)
        values.update((name, slot.numpy())
                      for name, slot in self.optimizer.slot_variables().items())
        return values

    def save(self, step):
        """Writes model.ckpt-<step> (chief only), names it in `checkpoint`, prunes old ones."""
        prefix = os.path.join(self.directory, f"{CHECKPOINT_PREFIX}-{step}")
        values = self.values(step)
        if not self.is_chief:
            return prefix
        tf.io.gfile.makedirs(self.directory)
        checkpoints.write_checkpoint(prefix, values, update_state=False)
        state = tf.train.get_checkpoint_state(self.directory)
        kept = [os.path.basename(p) for p in (state.all_model_checkpoint_paths if state else [])
                if checkpoint_step(p) is not None and checkpoint_step(p) != step]
        kept.append(os.path.basename(prefix))
        kept.sort(key=checkpoint_step)
        removed, kept = kept[:-self.keep_checkpoint_max], kept[-self.keep_checkpoint_max:]
        checkpoints.write_checkpoint_state(self.directory, kept[-1], kept)
        for old in removed:
            checkpoints.remove_checkpoint(os.path.join(self.directory, old))
        return prefix

    def restore_model(self, path):
        """Model variables only (evaluation); global_step too when the checkpoint has one."""
        reader = checkpoints.open_reader(path)
        report = checkpoints.load_into(self.variables_by_name, path)
        if getattr(report, "missing", ()):
            raise errors.UserInputError(
                f"{path}: cannot evaluate, the checkpoint lacks {list(report.missing)}")
        step = int(reader.get_tensor("global_step")) if reader.has_tensor("global_step") else 0
        self.optimizer.iterations.assign(step)
        return step

    def restore(self, path):
        """Model, slots and global_step from `path`; returns the step."""
        reader = tf.train.load_checkpoint(path)
        if not reader.has_tensor("global_step"):
            raise errors.UserInputError(f"{path}: no global_step; not a training checkpoint (use "
                             "--init_checkpoint to warm start from it)")
        report = checkpoints.load_into(self._state_variables(), path)
        missing = [name for name in getattr(report, "missing", ())]
        if missing:
            raise errors.UserInputError(f"{path}: cannot resume, the checkpoint lacks {missing}")
        step = int(reader.get_tensor("global_step"))
        self.optimizer.iterations.assign(step)
        logging.info("Restored %d variables and global_step %d from %s",
                     len(self._state_variables()), step, path)
        return step
