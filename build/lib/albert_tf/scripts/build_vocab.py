"""Trains an ALBERT-layout SentencePiece vocabulary (<prefix>.model, <prefix>.vocab).

  python build_vocab.py --input='data/brown/*.txt' --model_prefix=vocab/30k-clean

Defaults are the original README's spm_train command (unigram, 30000 pieces, <pad>=0,
<unk>=1, [CLS]=2, [SEP]=3, [MASK]=4, user symbols ( ) " - . – £ € from id 5, coverage
0.99995, 10M shuffled sentences). Lines are passed through preprocess_text (lower-cased with
--do_lower_case) first; --nopreprocess feeds the files to the trainer unchanged.
"""

from absl import app
from absl import flags
from absl import logging

from albert_tf import cli
from albert_tf import vocab

DEFAULTS = vocab.ALBERT_SPM_DEFAULTS
FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Text files: comma-separated globs, one sentence per line.")
flags.DEFINE_string("model_prefix", None, "Writes <model_prefix>.model and <model_prefix>.vocab.")
flags.DEFINE_integer("vocab_size", DEFAULTS["vocab_size"], "Number of pieces.", lower_bound=1)
flags.DEFINE_enum("model_type", DEFAULTS["model_type"], ["unigram", "bpe", "char", "word"],
                  "SentencePiece model type.")
flags.DEFINE_float("character_coverage", DEFAULTS["character_coverage"],
                   "Fraction of characters covered; the rest map to <unk>.", lower_bound=0, upper_bound=1)
flags.DEFINE_integer("input_sentence_size", DEFAULTS["input_sentence_size"],
                     "Sentences sampled for training (0 = all).", lower_bound=0)
flags.DEFINE_bool("shuffle_input_sentence", DEFAULTS["shuffle_input_sentence"],
                  "Sample the input sentences at random rather than taking the first ones.")
flags.DEFINE_integer("pad_id", DEFAULTS["pad_id"], "Id of <pad> (-1: none).")
flags.DEFINE_integer("unk_id", DEFAULTS["unk_id"], "Id of <unk>.")
flags.DEFINE_integer("bos_id", DEFAULTS["bos_id"], "Id of <s> (-1: none, as in ALBERT).")
flags.DEFINE_integer("eos_id", DEFAULTS["eos_id"], "Id of </s> (-1: none, as in ALBERT).")
# Plain strings split on "," (not absl list flags, whose CSV parsing treats `"` as a quote).
flags.DEFINE_string("control_symbols", ",".join(DEFAULTS["control_symbols"]),
                    "Comma-separated control symbols, ids right after <pad>/<unk>.")
flags.DEFINE_string("user_defined_symbols", ",".join(DEFAULTS["user_defined_symbols"]),
                    "Comma-separated symbols always kept as single pieces (\",\" itself cannot "
                    "be one).")
flags.DEFINE_bool("preprocess", True,
                  "Pass each line through tokenization.preprocess_text (whitespace collapse, "
                  "NFKD, accents dropped) before training, so the pieces match what the "
                  "tokenizer is given. --nopreprocess trains on the raw files like spm_train.")
flags.DEFINE_bool("do_lower_case", True,
                  "With --preprocess, lower-case the text (for uncased models, like the "
                  "released 30k-clean.model).")
flags.DEFINE_list("spm_options", [],
                  "Any other SentencePiece trainer options as key=value pairs, e.g. "
                  "num_threads=8,split_digits=true.")
flags.mark_flag_as_required("input")
flags.mark_flag_as_required("model_prefix")

_DEDICATED = ("vocab_size", "model_type", "character_coverage", "input_sentence_size",
              "shuffle_input_sentence", "pad_id", "unk_id", "bos_id", "eos_id",
              "control_symbols", "user_defined_symbols")


def _symbols(text):
    return [symbol for symbol in text.split(",") if symbol]


def trainer_settings():
    """The flags as SentencePiece trainer options; raises UsageError on a bad --spm_options."""
    settings = {name: FLAGS[name].value for name in _DEDICATED}
    settings["control_symbols"] = _symbols(FLAGS.control_symbols)
    settings["user_defined_symbols"] = _symbols(FLAGS.user_defined_symbols)
    for option in FLAGS.spm_options:
        key, separator, value = option.partition("=")
        key = key.strip()
        if not separator or not key:
            raise app.UsageError(f"--spm_options: expected key=value, got {option!r}")
        if key in _DEDICATED:
            raise app.UsageError(f"--spm_options: set {key} with --{key}")
        if key not in vocab.trainer_options():
            raise app.UsageError(
                f"--spm_options: unknown SentencePiece trainer option {key!r}; valid: "
                f"{', '.join(vocab.trainer_options())}")
        settings[key] = value.strip()
    return settings


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    settings = trainer_settings()
    input_files = vocab.expand_input_patterns(FLAGS.input)
    logging.info("training a %d-piece %s model on %d file(s)", FLAGS.vocab_size,
                 FLAGS.model_type, len(input_files))
    model_file = vocab.train_albert_spm(input_files, FLAGS.model_prefix,
                                       preprocess=FLAGS.preprocess,
                                       do_lower_case=FLAGS.do_lower_case, **settings)
    logging.info("wrote %s and %s.vocab", model_file, FLAGS.model_prefix)


def entry():
    """Console entry point (`pip install` puts it on PATH as `build_vocab`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
