r"""Re-saves an ALBERT checkpoint (model, pretraining heads, global_step) without optimizer slots.

  python export_checkpoints.py --albert_directory=albert_base --checkpoint_name=model.ckpt-best \
      --export_path=albert_base_clean/model.ckpt-best

The original's flags; the logic is `albert_tf.export.pretrained.export_checkpoint`.
"""

from absl import flags

from albert_tf import cli
from albert_tf.export import pretrained


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("albert_directory", None,
                  "Directory holding albert_config.json and the checkpoint.")
    define.string("checkpoint_name", "model.ckpt-best", "Checkpoint prefix inside albert_directory.")
    define.bool("do_lower_case", True, "Unused (kept for the original's command lines).")
    define.string("export_path", None, "Output checkpoint prefix.")
    flags.mark_flags_as_required(["albert_directory", "export_path"], flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    pretrained.export_checkpoint(flag_values.albert_directory, flag_values.checkpoint_name,
                                 flag_values.export_path)


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_checkpoints`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
