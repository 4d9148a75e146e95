"""A model directory in the release layout: load it, and re-save its checkpoint without slots.

A released tarball (`albert_base_v2.tar.gz` → `albert_base/`) or a `run_pretraining.py` output
directory holds `albert_config.json`, a checkpoint (`model.ckpt-best` by default) and, for the
hub export, the SentencePiece model. `load_pretraining_model` is shared by
`export_checkpoints.py` and `export_to_tfhub.py`.
"""

import os

from absl import logging

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.modeling import encoder, pretraining

CONFIG_FILENAME = "albert_config.json"


def load_pretraining_model(albert_directory, checkpoint_name=checkpoints.BEST_CHECKPOINT_NAME):
    """(config, `AlbertPretrainingModel` loaded from `<albert_directory>/<checkpoint_name>`, report).

    A missing or mis-shaped encoder variable is an error; missing heads are logged and keep
    their initial values (as the original's `init_from_checkpoint` did).
    """
    config = AlbertConfig.from_json_file(os.path.join(albert_directory, CONFIG_FILENAME))
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    report = checkpoints.load_into(model.checkpoint_variables(),
                                   os.path.join(albert_directory, checkpoint_name))
    return config, model, report


def export_checkpoint(albert_directory, checkpoint_name, export_path):
    """The original `export_checkpoints.py`: model + pretraining heads + `global_step`, no slots.

    Returns the written prefix. `global_step` is copied when the source has one (0 otherwise).
    """
    _, model, report = load_pretraining_model(albert_directory, checkpoint_name)
    stored = checkpoints.list_variables(report.checkpoint_path)
    step = (checkpoints.read_tensors(report.checkpoint_path, [checkpoints.GLOBAL_STEP])[checkpoints.GLOBAL_STEP]
            if checkpoints.GLOBAL_STEP in stored else 0)
    tensors = dict(model.checkpoint_variables())
    tensors[checkpoints.GLOBAL_STEP] = int(step)
    checkpoints.write_checkpoint(export_path, tensors)
    logging.info("Wrote %d tensors (global_step %d) to %s; skipped %d optimizer tensors",
                 len(tensors), step, export_path, len(report.skipped) - (checkpoints.GLOBAL_STEP in stored))
    return export_path
