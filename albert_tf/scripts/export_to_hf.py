"""Converts a checkpoint in the original layout to a Hugging Face model folder.

  python export_to_hf.py --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=out/SST-2/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --output_dir=sst2_hf
  python -c "import transformers; transformers.AutoModelForSequenceClassification.from_pretrained('sst2_hf')"

Writes config.json (hidden_act gelu_new: the original's tanh GELU), model.safetensors and, with
--spm_model_file, spiece.model and the tokenizer config; transformers 5 and keras-hub read it.
Neither PyTorch nor transformers is needed to write it. The logic is `albert_tf.hf_format`.
"""

from absl import app, flags, logging

from albert_tf import cli, hf_format
from albert_tf.config import AlbertConfig

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None, "The checkpoint's albert_config.json.")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint prefix or directory (original layout).")
flags.DEFINE_string("output_dir", None, "The Hugging Face folder to write (must not exist).")
flags.DEFINE_enum("architecture", "auto", ("auto",) + hf_format.ARCHITECTURES,
                  "The head to export; auto reads it from the checkpoint's variable names.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model: written as spiece.model.")
flags.DEFINE_bool("do_lower_case", True, "Whether the tokenizer lower-cases (tokenizer config).")
flags.DEFINE_list("label_names", None, "Class names of a classifier head, in label-id order.")
flags.mark_flags_as_required(["albert_config_file", "init_checkpoint", "output_dir"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.INFO)
    config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    architecture = hf_format.export_folder(
        config, FLAGS.init_checkpoint, FLAGS.output_dir, FLAGS.architecture,
        FLAGS.spm_model_file, FLAGS.do_lower_case, FLAGS.label_names)
    logging.info("Wrote %s (%s)", FLAGS.output_dir, hf_format.HF_CLASS[architecture])


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_to_hf`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
