"""Exports an ALBERT model directory as a reusable TF2 SavedModel with the original hub signatures.

  python export_to_tfhub.py --albert_directory=albert_base --checkpoint_name=model.ckpt-best \
      --export_path=albert_base_hub

The original's flags, plus --spm_model_file. The signatures are described in
`albert_tf/export/hub.py`; the logic is `albert_tf.export.hub.export_hub_module`.
"""

from absl import app
from absl import flags

from albert_tf import cli
from albert_tf.export import hub

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_directory", None,
                    "Directory holding albert_config.json, the SentencePiece model and the checkpoint.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best", "Checkpoint prefix inside albert_directory.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text; baked into "
                  "the tokenization_info signature.")
flags.DEFINE_bool("use_einsum", True, "False builds the graph without Einsum ops (as the original's "
                  "TF 1.15-compatible v2 modules; also easier for TFLite).")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model to ship (default: "
                    "<albert_directory>/30k-clean.model, else the directory's single *.model).")
flags.DEFINE_string("export_path", None, "Directory to write the SavedModel to (must not exist).")
flags.mark_flags_as_required(["albert_directory", "export_path"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    hub.export_hub_module(FLAGS.albert_directory, FLAGS.export_path, FLAGS.checkpoint_name,
                          FLAGS.do_lower_case, FLAGS.use_einsum, FLAGS.spm_model_file)


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_to_tfhub`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
