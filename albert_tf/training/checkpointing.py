"""Training checkpoints in the original layout: `model.ckpt-<step>` with the original names.

Each checkpoint holds the model (encoder + heads, names from `checkpoint_variables()`),
`global_step` (int64) and the optimizer slots `<name>/adam_m`, `<name>/adam_v`, so published
tools (Hugging Face `load_tf_weights_in_albert`, the original scripts) read it, and a restarted
run resumes with the same step, learning rate (a function of the step) and slots.

Exact resume: what else the rest of the run depends on is saved beside it, in
`train_state/step-<step>` (a `tf.train.Checkpoint` bundle, so the original-layout files stay as
they were): the variables the original layout has no name for (the dropout layers' Keras
seed-generator states, a float16 loss scale) and, on one device or on logical CPUs of one host
(`--cpu_replicas`, `replica_input`), the training input's `tf.data` iterator (shuffle buffer,
length-bucket windows, prefetched batches). Under MirroredStrategy over devices of their own,
TPU or multi-worker training the distributed iterator cannot be checkpointed (a TensorFlow
limit); the resumed run skips the batches of the steps done instead, the same position when
the input is deterministic (seeded). A run killed after `model.ckpt-N` and started again with
the same command therefore continues with the batches and dropout masks the uninterrupted run
would have drawn, and ends with the same bits.

Writing is crash-safe: `albert_tf.checkpoints.write_checkpoint` writes the files atomically
(data, then index), then the training state (same way), and only then the `checkpoint` state
file (TF's format, relative paths, itself written atomically) names the new checkpoint: a killed
run never leaves a half-written checkpoint that is taken for the latest.
The newest `keep_checkpoint_max` are kept. Under multi-worker training every worker holds the
same values and only the chief writes (the output directory must be shared, e.g. on GCS, as
the original's model_dir).

Resuming takes the newest checkpoint that reads back whole: a truncated or corrupted one (a
full disk, a copy cut short) is skipped with a warning naming the damaged file, and the one
before it is used; with none left the run stops with one line naming the file.
"""

import collections
import os
import re
import uuid

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import checkpoints, errors
from albert_tf.files import io_utils
from albert_tf.training import replica_input

CHECKPOINT_PREFIX = "model.ckpt"
TRAIN_STATE_DIR = "train_state"
_STEP_PATTERN = re.compile(r"model\.ckpt-(\d+)$")
# What reading a cut-short or corrupted bundle raises (IndexError: "Read less bytes than
# requested" from a short data file; OpError: a short index, a checksum mismatch, a lost file).
_UNREADABLE = (tf.errors.OpError, IndexError)


class DamagedCheckpointError(checkpoints.CheckpointError):
    """A checkpoint file cannot be read back whole."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: damaged checkpoint file ({reason})")
        self.path, self.reason = path, reason


def checkpoint_step(path):
    """The step in a `.../model.ckpt-<step>` path, or None (e.g. `model.ckpt-best`)."""
    match = _STEP_PATTERN.search(path)
    return int(match.group(1)) if match else None


def warm_start(variables_by_name, init_checkpoint, init_from_group0=False):
    """--init_checkpoint: load by name (heads may be missing); --init_from_group0 too."""
    report = checkpoints.load_into(variables_by_name, init_checkpoint,
                                   init_from_group0=init_from_group0)
    return report


def unnamed_state(variables, named):
    """The variables among `variables` that are not in the original layout's `{name: variable}`
    `named` (seed-generator states, a loss scale), in order, each once."""
    taken = {id(variable) for variable in named.values()}
    state = []
    for variable in variables:
        if id(variable) not in taken:
            taken.add(id(variable))
            state.append(variable)
    return state


def _bundle_files(prefix):
    return sorted(tf.io.gfile.glob(prefix + ".*"), key=lambda path: path.endswith(".index"))


def _read_whole(prefix):
    """Reads every tensor of a bundle; raises DamagedCheckpointError naming the bad file."""
    try:
        reader = tf.train.load_checkpoint(prefix)
    except _UNREADABLE as error:
        data = prefix + checkpoints.DATA_SUFFIX
        culprit = data if not tf.io.gfile.exists(data) else prefix + checkpoints.INDEX_SUFFIX
        raise DamagedCheckpointError(culprit, _reason(error)) from error
    for name, dtype in reader.get_variable_to_dtype_map().items():
        try:
            if dtype == tf.variant:  # an input position: readable by the restore op only
                tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[name], shape_and_slices=[""],
                                     dtypes=[dtype])
            else:
                reader.get_tensor(name)
        except _UNREADABLE as error:
            raise DamagedCheckpointError(prefix + checkpoints.DATA_SUFFIX,
                                         _reason(error)) from error


def _reason(error):
    text = getattr(error, "message", None) or str(error)
    return " ".join(text.split())[:200]


class CheckpointManager:
    """Saves, prunes and restores `model.ckpt-<step>` (and its training state) in one directory."""

    def __init__(self, directory, variables_by_name, optimizer, keep_checkpoint_max=5,
                 is_chief=True, state_variables=(), strategy=None):
        """`state_variables`: the unnamed variables a resumed run needs (see `unnamed_state`);
        `strategy`: the training strategy (None: the default one)."""
        self.directory = directory
        self.variables_by_name = variables_by_name
        self.optimizer = optimizer
        self.keep_checkpoint_max = keep_checkpoint_max
        self.is_chief = is_chief
        self.state_variables = list(state_variables)
        self.iterators_checkpointable = iterators_checkpointable(
            strategy or tf.distribute.get_strategy())
        self._iterator = None
        self._resumed_state = None  # the training-state prefix of the restored checkpoint
        self._resumed_step = 0

    def latest_checkpoint(self):
        return checkpoints.latest_checkpoint(self.directory)

    def state_prefix(self, step):
        """`train_state/step-<step>`: the training state saved with model.ckpt-<step>."""
        return os.path.join(self.directory, TRAIN_STATE_DIR, f"step-{step}")

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

    def _state_checkpoint(self, with_iterator):
        objects = {"variables": list(self.state_variables)}
        if with_iterator and self._iterator is not None:
            objects["iterator"] = self._iterator
        return tf.train.Checkpoint(**objects)

    def _write_train_state(self, step):
        """Writes train_state/step-<step> atomically: temporary bundle, data files, then index."""
        prefix = self.state_prefix(step)
        directory, base = os.path.split(prefix)
        tf.io.gfile.makedirs(directory)
        temp = os.path.join(directory, f".{base}{io_utils.TEMP_MARKER}{os.getpid()}-"
                                       f"{uuid.uuid4().hex[:8]}")
        try:
            self._state_checkpoint(with_iterator=True).write(temp)
            for path in _bundle_files(temp):
                tf.io.gfile.rename(path, prefix + path[len(temp):], overwrite=True)
        finally:
            for path in _bundle_files(temp):
                tf.io.gfile.remove(path)

    def remove_stale_temporaries(self):
        """The temporary training-state files a killed run left (call under the train lock)."""
        return io_utils.remove_stale_temporaries(os.path.join(self.directory, TRAIN_STATE_DIR))

    def save(self, step):
        """Writes model.ckpt-<step> (chief only) and its training state, names it in
        `checkpoint`, prunes old ones."""
        prefix = os.path.join(self.directory, f"{CHECKPOINT_PREFIX}-{step}")
        values = self.values(step)
        if not self.is_chief:
            return prefix
        tf.io.gfile.makedirs(self.directory)
        checkpoints.write_checkpoint(prefix, values, update_state=False)
        self._write_train_state(step)
        state = tf.train.get_checkpoint_state(self.directory)
        kept = [os.path.basename(p) for p in (state.all_model_checkpoint_paths if state else [])
                if checkpoint_step(p) is not None and checkpoint_step(p) != step]
        kept.append(os.path.basename(prefix))
        kept.sort(key=checkpoint_step)
        removed, kept = kept[:-self.keep_checkpoint_max], kept[-self.keep_checkpoint_max:]
        checkpoints.write_checkpoint_state(self.directory, kept[-1], kept)
        for old in removed:
            checkpoints.remove_checkpoint(os.path.join(self.directory, old))
            for path in tf.io.gfile.glob(self.state_prefix(checkpoint_step(old)) + "*"):
                tf.io.gfile.remove(path)
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

    def _resume_candidates(self):
        """The checkpoints the `checkpoint` file lists that exist, newest first."""
        state = tf.train.get_checkpoint_state(self.directory)
        if state is None:
            return []
        paths = list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]
        found = {}
        for path in paths:
            path = path if os.path.isabs(path) else os.path.join(self.directory, path)
            step = checkpoint_step(path)
            if step is not None and tf.io.gfile.exists(path + checkpoints.INDEX_SUFFIX):
                found[step] = path
        return [found[step] for step in sorted(found, reverse=True)]

    def restore_latest(self):
        """Restores the newest checkpoint that reads back whole (see `restore`); returns its
        path, or None when there is none. A damaged one is skipped with a warning naming the
        file; when every one is damaged, raises DamagedCheckpointError naming the newest."""
        damaged = []
        for path in self._resume_candidates():
            try:
                self.restore(path)
            except DamagedCheckpointError as error:
                logging.warning("Cannot resume from %s: %s; trying the checkpoint before it",
                                path, error)
                damaged.append(error)
                continue
            if damaged:
                logging.warning("Resuming from %s instead of the damaged %s", path,
                                ", ".join(error.path for error in damaged))
            return path
        if damaged:
            raise DamagedCheckpointError(
                damaged[0].path, f"{damaged[0].reason}; no earlier checkpoint in "
                f"{self.directory} reads back whole, so the run cannot resume: remove the "
                "damaged files or use another --output_dir")
        return None

    def restore(self, path):
        """Model, slots, global_step and the training state from `path`; returns the step.

        Raises DamagedCheckpointError (nothing is trusted) if a file of it does not read back
        whole."""
        _read_whole(path)
        reader = tf.train.load_checkpoint(path)
        if not reader.has_tensor("global_step"):
            raise errors.UserInputError(f"{path}: no global_step; not a training checkpoint (use "
                             "--init_checkpoint to warm start from it)")
        step = int(reader.get_tensor("global_step"))
        state_prefix = self._find_train_state(path, step)
        report = checkpoints.load_into(self._state_variables(), path)
        missing = [name for name in getattr(report, "missing", ())]
        if missing:
            raise errors.UserInputError(f"{path}: cannot resume, the checkpoint lacks {missing}")
        self.optimizer.iterations.assign(step)
        if state_prefix:
            self._state_checkpoint(with_iterator=False).read(
                state_prefix).expect_partial().assert_existing_objects_matched()
        self._resumed_state, self._resumed_step = state_prefix, step
        logging.info("Restored %d variables and global_step %d from %s%s",
                     len(self._state_variables()), step, path,
                     f" (training state {state_prefix})" if state_prefix else "")
        return step

    def _find_train_state(self, path, step):
        """The training-state prefix beside checkpoint `path` after checking it reads back
        whole, or None (warned: the resumed run will not be bit-identical to an uninterrupted
        one)."""
        prefix = os.path.join(os.path.dirname(path), TRAIN_STATE_DIR,
                              os.path.basename(self.state_prefix(step)))
        if not tf.io.gfile.exists(prefix + checkpoints.INDEX_SUFFIX):
            logging.warning("%s has no training state (%s): dropout draws afresh (the input "
                            "skips the batches done), so the run will not end with the bits of "
                            "an uninterrupted one", path, prefix)
            return None
        _read_whole(prefix)
        return prefix

    def resumed_input(self, make_iterator):
        """`make_iterator(skip_steps)` at the input position of the restored checkpoint (if
        any); the iterator is saved with every checkpoint from now on.

        The saved iterator state is restored where iterators can be checkpointed (one device,
        logical CPUs). A multi-device iterator (GPUs, TPU, multi-worker) cannot be: the input
        skips the batches of the restored steps instead, the same position when the pipeline
        is deterministic (seeded shuffles)."""
        step = self._resumed_step
        if self._resumed_state and self.iterators_checkpointable and _has_iterator(
                self._resumed_state):
            iterator = make_iterator(0)
            if self._restore_iterator(iterator):
                self._iterator = iterator
                return iterator
        # Built once (a second build would draw other shuffle seeds), past the steps done.
        iterator = make_iterator(step)
        if step:
            logging.info("Input position: skipped the batches of the %d steps done", step)
        self._iterator = iterator if self.iterators_checkpointable else None
        return iterator

    def _restore_iterator(self, iterator):
        try:
            tf.train.Checkpoint(iterator=iterator).read(
                self._resumed_state).expect_partial().assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError) as error:
            # The input pipeline changed since (other flags or data).
            logging.warning("Cannot restore the input position from %s (%s); the input is "
                            "rebuilt and the batches done are skipped", self._resumed_state,
                            _reason(error))
            return False
        logging.info("Input position restored from %s", self._resumed_state)
        return True


def iterators_checkpointable(strategy):
    """Whether `tf.train.Checkpoint` can save this strategy's training iterators (one device
    or logical CPUs of one host: a tf.data iterator; devices of their own: a multi-device
    iterator, which cannot). Probed on a dataset without random ops, so no shuffle seed is
    drawn."""
    probe = replica_input.ReplicaInput(strategy).datasets_from_function(
        lambda unused_context, batch_size: tf.data.Dataset.range(batch_size).batch(batch_size),
        strategy.num_replicas_in_sync)
    return isinstance(iter(probe), tf.__internal__.tracking.Trackable)


def _has_iterator(prefix):
    return any(name.startswith("iterator/")
               for name in tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
