"""Re-saves an ALBERT checkpoint (model, pretraining heads, global_step) without optimizer slots.

  python export_checkpoints.py --albert_directory=albert_base --checkpoint_name=model.ckpt-best \
      --export_path=albert_base_clean/model.ckpt-best

The original's flags; the logic is `albert_tf.export.pretrained.export_checkpoint`.
"""

from absl import app
from absl import flags

from albert_tf import cli
from albert_tf.export import pretrained

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_directory", None,
                    "Directory holding albert_config.json and the checkpoint.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best", "Checkpoint prefix inside albert_directory.")
flags.DEFINE_bool("do_lower_case", True, "Unused (kept for the original's command lines).")
flags.DEFINE_string("export_path", None, "Output checkpoint prefix.")
flags.mark_flags_as_required(["albert_directory", "export_path"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    pretrained.export_checkpoint(FLAGS.albert_directory, FLAGS.checkpoint_name, FLAGS.export_path)


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_checkpoints`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
