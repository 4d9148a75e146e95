r"""Converts a Hugging Face ALBERT folder to a checkpoint in the original layout.

  python import_from_hf.py --hf_model_dir=albert-base-v2 --output_dir=albert_base
  python run_classifier.py ... --albert_config_file=albert_base/albert_config.json \
      --spm_model_file=albert_base/spiece.model --init_checkpoint=albert_base

Reads config.json and the weights (model.safetensors or pytorch_model.bin, the latter with torch
installed; one file or shards with their .index.json) of any transformers ALBERT class
(AlbertModel, AlbertForPreTraining, AlbertForMaskedLM, AlbertForSequenceClassification,
AlbertForTokenClassification, AlbertForQuestionAnswering, AlbertForMultipleChoice) and writes
albert_config.json and model.ckpt-0 (the original's variable names, `global_step` 0) into
--output_dir: the encoder, and every head the weights hold (the masked-LM head as
cls/predictions, the pooler when present); what the folder lacks is named at INFO and each
fine-tuning script initialises it as a new head. A classifier's id2label becomes labels.txt.
The folder's spiece.model and tokenizer.json are copied, whichever it has. Every script takes
the output as --init_checkpoint. Nothing is downloaded: --hf_model_dir is a local folder. The
logic is `albert_tf.huggingface.hf_import`.
"""

from absl import flags, logging

from albert_tf import cli
from albert_tf.huggingface import hf_format, hf_import


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("hf_model_dir", None, "A local Hugging Face ALBERT model folder.")
    define.string("output_dir", None, "Where albert_config.json and model.ckpt-0 go.")
    define.enum("architecture", "auto", ("auto",) + hf_format.ARCHITECTURES,
                "An override: auto takes the encoder and every head the weights hold; encoder "
                "takes the encoder (and pooler) of any folder; another architecture requires "
                "its head.")
    flags.mark_flags_as_required(["hf_model_dir", "output_dir"], flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    prefix, architecture = hf_import.import_folder(flag_values.hf_model_dir, flag_values.output_dir,
                                                   flag_values.architecture)
    logging.info("Wrote %s (%s)", prefix, architecture)


def entry():
    """Console entry point (`pip install` puts it on PATH as `import_from_hf`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
