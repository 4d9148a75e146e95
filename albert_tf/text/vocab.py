"""Training an ALBERT-layout SentencePiece model (the original README's `spm_train` settings).

The released `30k-clean.model` has `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4 and
the user-defined symbols after them; the data and fine-tuning code relies on those ids.
"""

import glob
import os

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf import errors
from albert_tf.files import input_files as input_files_lib
from albert_tf.files import text_check
from albert_tf.text import tokenization

ALBERT_SPM_DEFAULTS = {
    "vocab_size": 30000,
    "model_type": "unigram",
    "pad_id": 0,
    "unk_id": 1,
    "bos_id": -1,
    "eos_id": -1,
    "control_symbols": ["[CLS]", "[SEP]", "[MASK]"],
    # A list, not the command line's comma string: the trainer reads `"` there as a CSV quote.
    "user_defined_symbols": ["(", ")", "\"", "-", ".", "–", "£", "€"],
    "character_coverage": 0.99995,
    "input_sentence_size": 10000000,
    "shuffle_input_sentence": True,
}
SPECIAL_PIECES = {"<pad>": 0, "<unk>": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
# Settings this module supplies itself.
_RESERVED = ("input", "model_prefix", "sentence_iterator", "model_writer")


def trainer_options():
    """Every option name SentencePieceTrainer.train accepts: the TrainerSpec and NormalizerSpec
    fields, the normalisation-rule shorthands and the log level."""
    names = set(sentencepiece_model_pb2.TrainerSpec.DESCRIPTOR.fields_by_name)
    names |= set(sentencepiece_model_pb2.NormalizerSpec.DESCRIPTOR.fields_by_name)
    names -= {"name", "precompiled_charsmap"}
    names |= {"normalization_rule_name", "normalization_rule_tsv", "denormalization_rule_tsv",
              "minloglevel"}
    return sorted(names)


def expand_input_patterns(patterns):
    """Comma-separated globs (a string or a list) -> sorted file list per glob, in order.

    Raises FileNotFoundError naming the first glob that matches no file."""
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    files = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matched = sorted(_gfile().glob(pattern) if "://" in pattern else glob.glob(pattern))
        if not matched:
            raise errors.MissingFileError(f"--input: no file matches {pattern!r}")
        files.extend(matched)
    if not files:
        raise errors.MissingFileError("--input: no input files given")
    return files


def _check_text_inputs(input_files):
    """Every file UTF-8 text, and some text in all: SentencePiece's trainer otherwise fails
    with an internal assertion (no input) or learns pieces of a binary file."""
    has_text = False
    for path in input_files:
        head = text_check.check_is_text(path)
        has_text = has_text or bool(head.strip()) or len(head) == text_check.SNIFF_BYTES
    if not has_text:
        raise errors.UserInputError(f"--input: {', '.join(input_files)}: no text in the input "
                                 "(the files are empty or blank)")


def _gfile():
    """TensorFlow's file API, for remote (gs://...) paths; imported only when needed."""
    import tensorflow as tf
    return tf.io.gfile


def _open(path):
    return _gfile().GFile(path, "rb") if "://" in path else open(path, "rb")


def _preprocessed_lines(input_files, do_lower_case):
    """Each non-empty line through tokenization.preprocess_text, as the tokenizer will see it."""
    for path in input_files:
        with _open(path) as reader:
            for raw in reader:
                line = tokenization.preprocess_text(raw.decode("utf-8", "replace"),
                                                    lower=do_lower_case)
                if line:
                    yield line


def train_albert_spm(input_files, model_prefix, preprocess=False, do_lower_case=True,
                     **overrides):
    """Trains `<model_prefix>.model` / `.vocab` from text files; both appear only when complete.

    `overrides` replace ALBERT_SPM_DEFAULTS or set any other trainer option. With `preprocess`,
    every line first goes through `preprocess_text(line, lower=do_lower_case)` (whitespace
    collapse, NFKD, accents dropped, optional lowercasing), so the pieces are learnt from the
    text the tokenizer will actually be given; without it the files go to the trainer as they
    are, as the original README's `spm_train` command did.
    """
    for path in input_files:
        input_files_lib.check_file(path, "vocabulary input file")
    _check_text_inputs(input_files)
    unknown = sorted(set(overrides) - set(trainer_options()))
    reserved = sorted(set(overrides) & set(_RESERVED))
    if unknown or reserved:
        raise errors.UserInputError(
            f"unknown SentencePiece trainer option(s) {unknown + reserved}; valid options: "
            f"{', '.join(o for o in trainer_options() if o not in _RESERVED)}")
    settings = dict(ALBERT_SPM_DEFAULTS)
    settings.update(overrides)
    settings.setdefault("minloglevel", 2)
    if preprocess:
        settings["sentence_iterator"] = _preprocessed_lines(input_files, do_lower_case)
    else:
        settings["input"] = ",".join(input_files)
    from albert_tf.files import io_utils  # imports TensorFlow; not needed to report bad flags
    directory = os.path.dirname(os.path.abspath(model_prefix))
    os.makedirs(directory, exist_ok=True)
    with io_utils.atomic_path(model_prefix + ".model") as temp_model:
        temp_prefix = temp_model[: -len(".model")] if temp_model.endswith(".model") else temp_model
        spm.SentencePieceTrainer.train(model_prefix=temp_prefix, **settings)
        os.replace(temp_prefix + ".model", temp_model)
        os.replace(temp_prefix + ".vocab", model_prefix + ".vocab")
    return model_prefix + ".model"
