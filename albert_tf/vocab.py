"""Training an ALBERT-layout SentencePiece model (the original README's `spm_train` settings).

The released `30k-clean.model` has `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4 and
the user-defined symbols after them; the data and fine-tuning code relies on those ids.
"""

import os

import sentencepiece as spm

from albert_tf import io_utils

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


def train_albert_spm(input_files, model_prefix, **overrides):
    """Trains `<model_prefix>.model` / `.vocab` from text files; both appear only when complete."""
    for path in input_files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: vocabulary input file does not exist")
    settings = dict(ALBERT_SPM_DEFAULTS)
    settings.update(overrides)
    directory = os.path.dirname(os.path.abspath(model_prefix))
    os.makedirs(directory, exist_ok=True)
    with io_utils.atomic_path(model_prefix + ".model") as temp_model:
        temp_prefix = temp_model[: -len(".model")] if temp_model.endswith(".model") else temp_model
        spm.SentencePieceTrainer.train(
            input=",".join(input_files), model_prefix=temp_prefix, minloglevel=2, **settings)
        os.replace(temp_prefix + ".model", temp_model)
        os.replace(temp_prefix + ".vocab", model_prefix + ".vocab")
    return model_prefix + ".model"
