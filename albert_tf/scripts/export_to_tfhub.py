r"""Exports an ALBERT model directory as a reusable TF2 SavedModel with the original hub signatures.

  python export_to_tfhub.py --albert_directory=albert_base --checkpoint_name=model.ckpt-best \
      --export_path=albert_base_hub

The original's flags, plus --spm_model_file and --export_precision (float32, bfloat16). The
signatures are described in `albert_tf/export/hub.py`; the logic is
`albert_tf.export.hub.export_hub_module`.
"""

from absl import flags

from albert_tf import cli
from albert_tf.export import hub


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("albert_directory", None,
                  "Directory holding albert_config.json, the SentencePiece model and the checkpoint.")
    define.string("checkpoint_name", "model.ckpt-best", "Checkpoint prefix inside albert_directory.")
    define.bool("do_lower_case", True, "Whether to lower case the input text; baked into "
                "the tokenization_info signature.")
    define.bool("use_einsum", True, "Accepted as the original's flag; no effect: the graph is "
                "always reshape + MatMul, without Einsum ops (as the original's TF "
                "1.15-compatible v2 modules), the same variables and results.")
    define.string("spm_model_file", None, "SentencePiece model to ship (default: "
                  "<albert_directory>/30k-clean.model, else the directory's single *.model).")
    define.string("export_path", None, "Directory to write the SavedModel to (must not exist).")
    define.enum("export_precision", "float32", hub.EXPORT_PRECISIONS, "Precision of the module "
                "(new): float32; bfloat16 (the same signatures, inputs and float32 outputs, "
                "matrix products and their weights in bfloat16; for inference: no trainable "
                "variables, training=True refused).")
    flags.mark_flags_as_required(["albert_directory", "export_path"], flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    hub.export_hub_module(flag_values.albert_directory, flag_values.export_path,
                          flag_values.checkpoint_name, flag_values.do_lower_case,
                          flag_values.spm_model_file, flag_values.export_precision)


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_to_tfhub`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
