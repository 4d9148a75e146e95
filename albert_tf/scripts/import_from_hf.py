r"""Converts a Hugging Face ALBERT folder to a checkpoint in the original layout.

  python import_from_hf.py --hf_model_dir=albert-base-v2 --output_dir=albert_base
  python run_classifier.py ... --albert_config_file=albert_base/albert_config.json \
      --spm_model_file=albert_base/spiece.model --init_checkpoint=albert_base

Reads config.json and model.safetensors (or pytorch_model.bin, with torch installed) and writes
albert_config.json and model.ckpt-0 (the original's variable names, `global_step` 0) into
--output_dir, with copies of the folder's spiece.model and tokenizer.json, whichever it has (a
warning says when there is no spiece.model, which the scripts' --spm_model_file needs); every
script takes it as --init_checkpoint. Nothing is
downloaded: --hf_model_dir is a local folder. The logic is `albert_tf.huggingface.hf_format`.
"""

from absl import flags, logging

from albert_tf import cli
from albert_tf.huggingface import hf_format


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("hf_model_dir", None, "A local Hugging Face ALBERT model folder.")
    define.string("output_dir", None, "Where albert_config.json and model.ckpt-0 go.")
    define.enum("architecture", "auto", ("auto",) + hf_format.ARCHITECTURES,
                "The head to import; auto reads it from config.json's architectures.")
    flags.mark_flags_as_required(["hf_model_dir", "output_dir"], flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    prefix, architecture = hf_format.import_folder(flag_values.hf_model_dir, flag_values.output_dir,
                                                   flag_values.architecture)
    logging.info("Wrote %s (%s head)", prefix, architecture)


def entry():
    """Console entry point (`pip install` puts it on PATH as `import_from_hf`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
