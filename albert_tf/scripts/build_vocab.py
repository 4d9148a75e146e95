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
from albert_tf.text import vocab

DEFAULTS = vocab.ALBERT_SPM_DEFAULTS


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("input", None, "Text files: comma-separated globs, one sentence per line.")
    define.string("model_prefix", None, "Writes <model_prefix>.model and <model_prefix>.vocab.")
    define.integer("vocab_size", DEFAULTS["vocab_size"], "Number of pieces.", lower_bound=1)
    define.enum("model_type", DEFAULTS["model_type"], ["unigram", "bpe", "char", "word"],
                "SentencePiece model type.")
    define.float("character_coverage", DEFAULTS["character_coverage"],
                 "Fraction of characters covered; the rest map to <unk>.", lower_bound=0, upper_bound=1)
    define.integer("input_sentence_size", DEFAULTS["input_sentence_size"],
                   "Sentences sampled for training (0 = all).", lower_bound=0)
    define.bool("shuffle_input_sentence", DEFAULTS["shuffle_input_sentence"],
                "Sample the input sentences at random rather than taking the first ones.")
    define.integer("pad_id", DEFAULTS["pad_id"], "Id of <pad> (-1: none).")
    define.integer("unk_id", DEFAULTS["unk_id"], "Id of <unk>.")
    define.integer("bos_id", DEFAULTS["bos_id"], "Id of <s> (-1: none, as in ALBERT).")
    define.integer("eos_id", DEFAULTS["eos_id"], "Id of </s> (-1: none, as in ALBERT).")
    # Plain strings split on "," (not absl list flags, whose CSV parsing treats `"` as a quote).
    define.string("control_symbols", ",".join(DEFAULTS["control_symbols"]),
                  "Comma-separated control symbols, ids right after <pad>/<unk>.")
    define.string("user_defined_symbols", ",".join(DEFAULTS["user_defined_symbols"]),
                  "Comma-separated symbols always kept as single pieces (\",\" itself cannot "
                  "be one).")
    define.bool("preprocess", True,
                "Pass each line through tokenization.preprocess_text (whitespace collapse, "
                "NFKD, accents dropped) before training, so the pieces match what the "
                "tokenizer is given. --nopreprocess trains on the raw files like spm_train.")
    define.bool("do_lower_case", True,
                "With --preprocess, lower-case the text (for uncased models, like the "
                "released 30k-clean.model).")
    define.list("spm_options", [],
                "Any other SentencePiece trainer options as key=value pairs, e.g. "
                "num_threads=8,split_digits=true.")
    flags.mark_flag_as_required("input", flag_values=flag_values)
    flags.mark_flag_as_required("model_prefix", flag_values=flag_values)


_DEDICATED = ("vocab_size", "model_type", "character_coverage", "input_sentence_size",
              "shuffle_input_sentence", "pad_id", "unk_id", "bos_id", "eos_id",
              "control_symbols", "user_defined_symbols")


def _symbols(text):
    return [symbol for symbol in text.split(",") if symbol]


def trainer_settings(flag_values):
    """The flags as SentencePiece trainer options; raises UsageError on a bad --spm_options."""
    settings = {name: flag_values[name].value for name in _DEDICATED}
    settings["control_symbols"] = _symbols(flag_values.control_symbols)
    settings["user_defined_symbols"] = _symbols(flag_values.user_defined_symbols)
    for option in flag_values.spm_options:
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


def run(flag_values):
    """The whole script on parsed flags."""
    settings = trainer_settings(flag_values)
    input_files = vocab.expand_input_patterns(flag_values.input)
    logging.info("training a %d-piece %s model on %d file(s)", flag_values.vocab_size,
                 flag_values.model_type, len(input_files))
    model_file = vocab.train_albert_spm(input_files, flag_values.model_prefix,
                                       preprocess=flag_values.preprocess,
                                       do_lower_case=flag_values.do_lower_case, **settings)
    logging.info("wrote %s and %s.vocab", model_file, flag_values.model_prefix)


def entry():
    """Console entry point (`pip install` puts it on PATH as `build_vocab`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
