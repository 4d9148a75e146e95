"""Name-based checkpoints in the original ALBERT layout: writing, reading, loading into models.

The names come from `model.checkpoint_variables()` (an ordered {original name: variable} map);
this module never invents names. Files are TF1-style bundles (`<prefix>.index` +
`<prefix>.data-00000-of-00001`) that `tf.train.load_checkpoint`, the original TF 1.15 code and
Hugging Face `load_tf_weights_in_albert` read.

Writing
    write_checkpoint(prefix, {name: value}, update_state=True)
        Any names and values (variables, tensors, numpy arrays, Python scalars). The bundle is
        written under a temporary prefix in the same directory, then renamed data first, index
        last, so an interrupted write never leaves a readable half checkpoint. With
        update_state the directory's `checkpoint` file (TF's CheckpointState text proto,
        `model_checkpoint_path: "model.ckpt-N"`) is rewritten atomically to name it.
        Optimizer slots and the step go through the same call: `<var>/adam_m`, `<var>/adam_v`
        (same shape as the variable) and `global_step` (int64 scalar).
    write_checkpoint_state(directory, prefix, all_prefixes=None)
        Rewrites the state file alone (a checkpoint manager pruning old checkpoints).
    copy_checkpoint(source, destination)   e.g. `model.ckpt-N` → `model.ckpt-best`.
    remove_checkpoint(prefix)

Reading
    resolve_checkpoint(path) → prefix
        A prefix (`.../model.ckpt-best`), a directory with a `checkpoint` state file (its latest
        checkpoint), a directory holding a single checkpoint (an unpacked release tarball:
        `model.ckpt-best`), or a TF1 Hub module directory (`variables/variables`).
    latest_checkpoint(directory) → prefix or None (from the `checkpoint` state file).
    list_variables(path) → {name: shape};  read_tensors(path, names=None) → {name: numpy array}
        Arbitrary names, exactly as stored (optimizer slots, `global_step`, `module/...`).
    open_reader(path) → a `tf.train.load_checkpoint` reader, or CheckpointError naming the
        file when the index is damaged; tensors read through `read_tensors` / `load_into`
        name the data file and its size when it is truncated (a killed copy, a full disk).
    load_into(variables_by_name, path, init_from_group0=False, new_heads=False) → LoadReport
        Assigns every variable found by name. TF1 Hub names (`module/bert/...`) match their
        unprefixed form. Optimizer slots (`adam_m`, `adam_v`, `lamb_m`, `lamb_v`) and
        `global_step` are skipped unless asked for by name. A missing encoder variable
        (`bert/...`) raises `CheckpointError` naming it and the checkpoint, and so does any
        variable stored with another shape (a 2-label head read for a 3-label task would
        otherwise be replaced by a random one and predict nonsense), naming both shapes. A
        missing head is reported, logged and left at its initial value; with new_heads a
        mis-shaped head is too (the caller says the head is new and will be trained).
        init_from_group0 (run_pretraining's flag) initialises `group_N` (N > 0) that the
        checkpoint lacks from its `group_0` (and `attention_N`/`ffn_N` from `attention_1`/`ffn_1`);
        a `group_N` the checkpoint has is loaded as it is.
"""

import collections
import dataclasses
import os
import re
import uuid

import tensorflow as tf
from absl import logging

from albert_tf import errors
from albert_tf.files import io_utils

DATA_SUFFIX = ".data-00000-of-00001"
INDEX_SUFFIX = ".index"
STATE_FILENAME = "checkpoint"
BEST_CHECKPOINT_NAME = "model.ckpt-best"
HUB_VARIABLES = os.path.join("variables", "variables")
HUB_SCOPE = "module/"
ENCODER_SCOPE = "bert/"
POOLER_SCOPE = "bert/pooler/"
OPTIMIZER_SLOTS = ("adam_m", "adam_v", "lamb_m", "lamb_v")
GLOBAL_STEP = "global_step"


class CheckpointError(errors.UserInputError):
    """A checkpoint cannot be used for the requested variables."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """No checkpoint at the given path."""


# ----------------------------------------------------------------------------- writing


def _to_tensor(value):
    """Python ints become int64 (the dtype of the original's `global_step`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return tf.constant(value, tf.int64)
    return tf.convert_to_tensor(value)


def write_checkpoint(prefix, name_to_value, update_state=True):
    """Writes `{name: value}` as `<prefix>.index` / `<prefix>.data-00000-of-00001`; returns prefix."""
    if not name_to_value:
        raise CheckpointError(f"{prefix}: nothing to write")
    directory, base = os.path.split(prefix)
    directory = directory or "."
    tf.io.gfile.makedirs(directory)
    temp_prefix = os.path.join(directory, f".{base}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    names = list(name_to_value)
    tensors = [_to_tensor(name_to_value[name]) for name in names]
    try:
        tf.raw_ops.SaveV2(prefix=temp_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                          tensors=tensors)
        tf.io.gfile.rename(temp_prefix + DATA_SUFFIX, prefix + DATA_SUFFIX, overwrite=True)
        tf.io.gfile.rename(temp_prefix + INDEX_SUFFIX, prefix + INDEX_SUFFIX, overwrite=True)
    except (OSError, tf.errors.OpError) as error:
        io_utils.raise_if_disk_full(error, prefix + DATA_SUFFIX)
        raise
    finally:
        for suffix in (DATA_SUFFIX, INDEX_SUFFIX):
            if tf.io.gfile.exists(temp_prefix + suffix):
                tf.io.gfile.remove(temp_prefix + suffix)
    if update_state:
        state = tf.train.get_checkpoint_state(directory)
        previous = [p for p in (state.all_model_checkpoint_paths if state else [])
                    if _exists(_absolute(directory, p)) and os.path.basename(p) != base]
        write_checkpoint_state(directory, prefix, previous + [prefix])
    return prefix


def write_checkpoint_state(directory, prefix, all_prefixes=None):
    """Atomically writes `<directory>/checkpoint` naming `prefix` as the latest (paths relative)."""
    latest = os.path.basename(prefix)
    relative = [os.path.basename(p) for p in (all_prefixes or [prefix])]
    if relative[-1] != latest:
        relative.append(latest)
    lines = [f"model_checkpoint_path: {_quoted(latest)}"]
    lines += [f"all_model_checkpoint_paths: {_quoted(path)}" for path in relative]
    io_utils.atomic_write_text(os.path.join(directory, STATE_FILENAME), "\n".join(lines) + "\n")


def _quoted(text):
    """A text-proto string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def copy_checkpoint(source, destination):
    """Copies a checkpoint's bundle files to another prefix (data first, index last)."""
    source = resolve_checkpoint(source)
    for suffix in (DATA_SUFFIX, INDEX_SUFFIX):
        with io_utils.atomic_path(destination + suffix) as temp:
            tf.io.gfile.copy(source + suffix, temp, overwrite=True)
    return destination


def remove_checkpoint(prefix):
    """Deletes a checkpoint's files (index first, so it stops being readable at once)."""
    for suffix in (INDEX_SUFFIX, DATA_SUFFIX, ".meta"):
        if tf.io.gfile.exists(prefix + suffix):
            tf.io.gfile.remove(prefix + suffix)


# ----------------------------------------------------------------------------- reading


def _exists(prefix):
    return tf.io.gfile.exists(prefix + INDEX_SUFFIX)


def _absolute(directory, path):
    return path if os.path.isabs(path) else os.path.join(directory, path)


def latest_checkpoint(directory):
    """The prefix named by `<directory>/checkpoint`, or None if there is none (or it is gone)."""
    return tf.train.latest_checkpoint(directory)


def resolve_checkpoint(path):
    """Turns a prefix, a checkpoint directory or a TF1 Hub module directory into a prefix."""
    if path is None or str(path) == "":
        raise CheckpointNotFoundError("no checkpoint path given")
    path = os.fspath(path)
    if path.endswith(INDEX_SUFFIX) and tf.io.gfile.exists(path):
        return path[: -len(INDEX_SUFFIX)]
    if _exists(path):
        return path
    if tf.io.gfile.isdir(path):
        hub_prefix = os.path.join(path, HUB_VARIABLES)
        if _exists(hub_prefix):
            return hub_prefix
        latest = latest_checkpoint(path)
        if latest:
            return latest
        candidates = sorted(name[: -len(INDEX_SUFFIX)] for name in tf.io.gfile.listdir(path)
                            if name.endswith(INDEX_SUFFIX) and not name.startswith("."))
        if BEST_CHECKPOINT_NAME in candidates:
            return os.path.join(path, BEST_CHECKPOINT_NAME)
        if len(candidates) == 1:
            return os.path.join(path, candidates[0])
        if candidates:
            raise CheckpointNotFoundError(
                f"{path}: several checkpoints and no '{STATE_FILENAME}' file naming the latest: "
                f"{candidates}; pass one prefix")
        raise CheckpointNotFoundError(
            f"{path}: no checkpoint in this directory (expected a '{STATE_FILENAME}' state file, "
            f"<prefix>{INDEX_SUFFIX} files or {HUB_VARIABLES}{INDEX_SUFFIX})")
    raise CheckpointNotFoundError(f"{path}: no checkpoint found (expected {path}{INDEX_SUFFIX})")


def open_reader(path):
    """`tf.train.load_checkpoint` for `path`, with a damaged index named instead of a traceback."""
    prefix = resolve_checkpoint(path)
    try:
        return tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, IndexError) as error:
        raise CheckpointError(
            f"{prefix}{INDEX_SUFFIX}: damaged checkpoint index ({_first_line(error)}); use an "
            f"older checkpoint or copy it again") from error


def _first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def get_tensor(reader, prefix, name):
    """`reader.get_tensor(name)`, with a truncated or corrupt data file named (and its size)."""
    try:
        return reader.get_tensor(name)
    except (tf.errors.OpError, IndexError) as error:
        data_file = prefix + DATA_SUFFIX
        if not tf.io.gfile.exists(data_file):
            raise CheckpointError(f"{data_file}: missing; the checkpoint's index is there but "
                                  f"not its data (an incomplete copy?)") from error
        size = tf.io.gfile.stat(data_file).length
        raise CheckpointError(
            f"{data_file}: truncated or corrupt checkpoint data: tensor {name} cannot be read "
            f"({_first_line(error)}; the file ends at byte offset {size}); use an older "
            f"checkpoint or copy it again") from error


def list_variables(path):
    """Ordered {stored name: shape tuple} of the checkpoint at `path` (see resolve_checkpoint)."""
    reader = open_reader(path)
    shapes = reader.get_variable_to_shape_map()
    return collections.OrderedDict((name, tuple(shapes[name])) for name in sorted(shapes))


def read_tensors(path, names=None):
    """{name: numpy array} for `names` (all stored tensors if None); a missing name is an error."""
    prefix = resolve_checkpoint(path)
    reader = open_reader(prefix)
    stored = reader.get_variable_to_shape_map()
    if names is None:
        names = sorted(stored)
    absent = [name for name in names if name not in stored]
    if absent:
        raise CheckpointError(f"{prefix}: no tensor named {absent[:5]}"
                              + (f" (+{len(absent) - 5} more)" if len(absent) > 5 else ""))
    return collections.OrderedDict((name, get_tensor(reader, prefix, name)) for name in names)


# ----------------------------------------------------------------------------- loading


@dataclasses.dataclass
class LoadReport:
    """What `load_into` did; `str(report)` is the log text."""
    checkpoint_path: str
    mapped: list = dataclasses.field(default_factory=list)      # (variable name, stored name)
    missing: list = dataclasses.field(default_factory=list)     # variable names not in the checkpoint
    unused: list = dataclasses.field(default_factory=list)      # stored names no variable took
    mismatched: list = dataclasses.field(default_factory=list)  # (name, variable shape, stored shape)
    skipped: list = dataclasses.field(default_factory=list)     # optimizer slots and global_step

    def __str__(self):
        lines = [f"Loaded {len(self.mapped)} variables from {self.checkpoint_path}; "
                 f"{len(self.missing)} missing, {len(self.mismatched)} shape mismatches, "
                 f"{len(self.unused)} unused, {len(self.skipped)} optimizer/step tensors skipped"]
        lines += [f"  mapped   {name} <- {stored}" if name != stored else f"  mapped   {name}"
                  for name, stored in self.mapped]
        lines += [f"  missing  {name} (left initialised)" for name in self.missing]
        lines += [f"  mismatch {name}: model {list(model)} vs checkpoint {list(stored)} (left initialised)"
                  for name, model, stored in self.mismatched]
        lines += [f"  unused   {name}" for name in self.unused]
        return "\n".join(lines)


def _is_skippable(name):
    return name == GLOBAL_STEP or name.rsplit("/", 1)[-1] in OPTIMIZER_SLOTS


def _canonical_names(stored_names):
    """{name the model would use: stored name}; TF1 Hub `module/x` answers for `x`."""
    canonical = {}
    for stored in stored_names:
        if stored.startswith(HUB_SCOPE):
            canonical.setdefault(stored[len(HUB_SCOPE):], stored)
    canonical.update({stored: stored for stored in stored_names})
    return canonical


_GROUP = re.compile(r"/group_(\d+)/")


def _group0_name(name):
    """`.../group_N/.../attention_M/...` → `.../group_0/.../attention_1/...` (None if N = 0)."""
    match = _GROUP.search(name)
    if not match or match.group(1) == "0":
        return None
    renamed = _GROUP.sub("/group_0/", name)
    renamed = re.sub(r"/attention_\d+/", "/attention_1/", renamed)
    return re.sub(r"/ffn_\d+/", "/ffn_1/", renamed)


def _is_encoder(name):
    """The variables a warm start cannot do without; the pooler is not one of them: a masked-LM,
    tagging or SQuAD model (transformers' AlbertForMaskedLM, ...) has none, and a fine-tuning
    script initialises it as a new head."""
    return name.startswith(ENCODER_SCOPE) and not name.startswith(POOLER_SCOPE)


def load_into(variables_by_name, checkpoint_path, init_from_group0=False, new_heads=False):
    """Assigns checkpoint tensors to `{original name: variable}`; returns a `LoadReport`."""
    prefix = resolve_checkpoint(checkpoint_path)
    reader = open_reader(prefix)
    stored_shapes = reader.get_variable_to_shape_map()
    canonical = _canonical_names(stored_shapes)
    report = LoadReport(checkpoint_path=prefix)
    taken = set()
    assignments = []
    for name, variable in variables_by_name.items():
        source = canonical.get(name)
        if source is None and init_from_group0 and _group0_name(name) in canonical:
            source = canonical[_group0_name(name)]  # the exact name wins, as in the original
        if source is None:
            report.missing.append(name)
            continue
        model_shape, stored_shape = tuple(variable.shape), tuple(stored_shapes[source])
        if model_shape != stored_shape:
            report.mismatched.append((name, model_shape, stored_shape))
            continue
        report.mapped.append((name, source))
        assignments.append((variable, source))
        taken.add(source)
    encoder_missing = [name for name in report.missing if _is_encoder(name)]
    if encoder_missing:
        raise CheckpointError(
            f"{prefix}: encoder variable {encoder_missing[0]} is not in the checkpoint"
            + (f" (nor {len(encoder_missing) - 1} more: {encoder_missing[1:4]}...)"
               if len(encoder_missing) > 1 else ""))
    encoder_mismatched = [entry for entry in report.mismatched if _is_encoder(entry[0])]
    if encoder_mismatched:
        name, model_shape, stored_shape = encoder_mismatched[0]
        raise CheckpointError(
            f"{prefix}: shape mismatch for encoder variable {name}: the model has "
            f"{list(model_shape)}, the checkpoint {list(stored_shape)} (is albert_config.json the "
            f"checkpoint's config?)")
    if report.mismatched and not new_heads:
        name, model_shape, stored_shape = report.mismatched[0]
        raise CheckpointError(
            f"{prefix}: shape mismatch for head variable {name}: the model has "
            f"{list(model_shape)}, the checkpoint {list(stored_shape)}: a head trained for "
            f"another label set or task. Use the task and labels it was trained with; to "
            f"fine-tune a new head on its encoder, warm-start from a copy without the head "
            f"(export_checkpoints.py --albert_directory=<its folder> --export_path=<prefix>)"
            + (f"; also mis-shaped: {[entry[0] for entry in report.mismatched[1:4]]}"
               if len(report.mismatched) > 1 else ""))
    values = [(variable, get_tensor(reader, prefix, source)) for variable, source in assignments]
    for variable, value in values:  # all read first: a damaged file changes no variable
        variable.assign(tf.cast(value, variable.dtype))
    for stored in stored_shapes:
        if stored in taken:
            continue
        (report.skipped if _is_skippable(stored) else report.unused).append(stored)
    logging.info("%s", report if logging.level_debug() else str(report).split("\n", 1)[0])  # list at -v 1
    # A head the checkpoint lacks is the expected case of fine-tuning from a pretraining
    # checkpoint (a new head, left initialised); a mis-shaped one (allowed with new_heads) is not.
    if report.missing:
        logging.info("Checkpoint %s has no %s: new head variables, left initialised", prefix,
                     ", ".join(report.missing))
    if report.mismatched:
        logging.warning("Checkpoint %s: %d head variables of another shape, left initialised: "
                        "%s", prefix, len(report.mismatched),
                        ", ".join(f"{name} (model {list(model)}, checkpoint {list(stored)})"
                                  for name, model, stored in report.mismatched))
    return report


def load_complete(variables_by_name, checkpoint_path, expected):
    """`load_into` for a fine-tuned model that needs every variable, heads included: a
    CheckpointError naming the checkpoint, `expected` (what it should have been) and what it
    lacks or mis-shapes."""
    report = load_into(variables_by_name, checkpoint_path)
    if report.missing or report.mismatched:
        raise CheckpointError(
            f"{report.checkpoint_path}: not {expected}; missing or mis-shaped: "
            f"{report.missing + [entry[0] for entry in report.mismatched]}")
    return report
