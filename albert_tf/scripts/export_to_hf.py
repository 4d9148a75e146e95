r"""Converts a checkpoint in the original layout to a Hugging Face model folder.

  python export_to_hf.py --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=out/SST-2/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --output_dir=sst2_hf
  python -c "import transformers; transformers.AutoModelForSequenceClassification.from_pretrained('sst2_hf')"

Writes config.json (hidden_act gelu_new: the original's tanh GELU), model.safetensors (the class
of the checkpoint's head: AlbertForPreTraining, AlbertForMaskedLM for cls/predictions without a
sentence-order head, AlbertForSequenceClassification, ...; --architecture=token_classification
for a tagging head, whose names are a classifier's) and, with
--spm_model_file, spiece.model, tokenizer.json and the tokenizer config; transformers 5 and
keras-hub read it. tokenizer.json tokenizes as the original does (`albert_tf.text.hf_tokenizer`;
Hugging Face's own ALBERT tokenizers do not), and `AutoTokenizer` loads it without
sentencepiece or protobuf, except on some numbers (learned pieces such as "6,", and
segmentations of equal score, which SentencePiece ranks by float32 rounding; docs/tokenization.md):
`AutoTokenizer.from_pretrained(folder, trust_remote_code=True)` loads the copied
`albert_tf.huggingface.exact` files, which run SentencePiece's own search, exact on every line. The export logs on
how many lines of a sample (--tokenizer_sample_file) each differs from the original. Neither
PyTorch nor transformers is needed to write it. The logic is `albert_tf.huggingface.hf_format`.
"""

from absl import flags, logging

from albert_tf import cli
from albert_tf.files import input_files
from albert_tf.huggingface import hf_format
from albert_tf.config import AlbertConfig


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("albert_config_file", None, "The checkpoint's albert_config.json.")
    define.string("init_checkpoint", None, "Checkpoint prefix or directory (original layout).")
    define.string("output_dir", None, "The Hugging Face folder to write (must not exist).")
    define.enum("architecture", "auto", ("auto",) + hf_format.ARCHITECTURES,
                "The head to export; auto reads it from the checkpoint's variable names "
                "(a one-output or tagging head needs it named).")
    define.string("spm_model_file", None,
                  "SentencePiece model: written as spiece.model and as tokenizer.json.")
    define.bool("do_lower_case", True, "Whether the tokenizer lower-cases (as preprocess_text).")
    define.list("label_names", None, "Class names of a classifier head, in label-id order.")
    define.string("tokenizer_sample_file", None,
                  "Text file, one text a line (e.g. some of your corpus): the export reports on "
                  "how many of its lines tokenizer.json's ids differ from the original "
                  "tokenization. Default: a built-in sample of numbers with commas.")
    flags.mark_flags_as_required(["albert_config_file", "init_checkpoint", "output_dir"],
                                 flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    config = AlbertConfig.from_json_file(flag_values.albert_config_file)
    sample = _tokenizer_sample(flag_values.tokenizer_sample_file)  # checked before any writing
    architecture = hf_format.export_folder(
        config, flag_values.init_checkpoint, flag_values.output_dir, flag_values.architecture,
        flag_values.spm_model_file, flag_values.do_lower_case, flag_values.label_names)
    logging.info("Wrote %s (%s)", flag_values.output_dir, hf_format.HF_CLASS[architecture])
    if flag_values.spm_model_file:
        lines, source = sample
        fast, exact = hf_format.tokenizer_differences(
            flag_values.output_dir, flag_values.spm_model_file, flag_values.do_lower_case, lines)
        logging.info("Tokenizer: the ids of %d of %d lines of %s differ from the original "
                     "tokenization through tokenizer.json (AutoTokenizer.from_pretrained(folder)), "
                     "%d through AutoTokenizer.from_pretrained(folder, trust_remote_code=True)",
                     fast, len(lines), source, exact)
        if exact:
            logging.warning("The exact tokenizer differs from the original on %d lines of %s: "
                            "a bug, please report it", exact, source)


def _tokenizer_sample(path):
    """(lines, what they are) on which the export compares tokenizer.json with the original."""
    if not path:
        return hf_format.number_sample(), "the built-in sample of numbers"
    lines = [line for line in input_files.read_text(path, "--tokenizer_sample_file").splitlines()
             if line.strip()]
    return lines, path


def entry():
    """Console entry point (`pip install` puts it on PATH as `export_to_hf`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
