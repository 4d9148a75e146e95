"""Converts a Hugging Face ALBERT folder to a checkpoint in the original layout.

  python import_from_hf.py --hf_model_dir=albert-base-v2 --output_dir=albert_base
  python run_classifier.py ... --albert_config_file=albert_base/albert_config.json \
      --spm_model_file=albert_base/spiece.model --init_checkpoint=albert_base

Reads config.json and model.safetensors (or pytorch_model.bin, with torch installed) and writes
albert_config.json, model.ckpt-0 (the original's variable names, `global_step` 0) and
spiece.model into --output_dir; every script takes it as --init_checkpoint. Nothing is
downloaded: --hf_model_dir is a local folder. The logic is `albert_tf.hf_format`.
"""

from absl import app, flags, logging

from albert_tf import cli, hf_format

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_model_dir", None, "A local Hugging Face ALBERT model folder.")
flags.DEFINE_string("output_dir", None, "Where albert_config.json and model.ckpt-0 go.")
flags.DEFINE_enum("architecture", "auto", ("auto",) + hf_format.ARCHITECTURES,
                  "The head to import; auto reads it from config.json's architectures.")
flags.mark_flags_as_required(["hf_model_dir", "output_dir"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.INFO)
    prefix, architecture = hf_format.import_folder(FLAGS.hf_model_dir, FLAGS.output_dir,
                                                   FLAGS.architecture)
    logging.info("Wrote %s (%s head)", prefix, architecture)


def entry():
    """Console entry point (`pip install` puts it on PATH as `import_from_hf`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
