"""The settings of one data-creation run: the original flags plus the new ones."""

import dataclasses

from albert_tf import errors
from albert_tf.pretraining import masking

# Below this, pairs of real sentences rarely fit: on the Brown Corpus --max_seq_length=5 gave
# sentence-order label 1 on all 396 instances, 8 on 96%, 16 on 93%, 64 on 56%.
MIN_MAX_SEQ_LENGTH = 16


@dataclasses.dataclass(frozen=True)
class DataOptions:
    """Defaults are the original `create_pretraining_data.py` flag defaults."""
    vocab_file: str = None
    spm_model_file: str = None
    input_file_mode: str = "r"
    do_lower_case: bool = True
    do_whole_word_mask: bool = True
    do_permutation: bool = False
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False
    max_seq_length: int = 512
    ngram: int = 3
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 40
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    # New: instances held per input file to mix the output order (the original held all).
    shuffle_buffer_size: int = 10000

    @property
    def masked_lm_length(self):
        """Length of the masked_lm_* features: doubled by do_permutation."""
        return self.max_predictions_per_seq * (2 if self.do_permutation else 1)

    def validate(self):
        """Raises ValueError naming the flag and what was expected."""
        if not self.vocab_file and not self.spm_model_file:
            raise errors.UserInputError("--vocab_file is required when --spm_model_file is not given")
        if self.input_file_mode not in ("r", "rb"):
            raise errors.UserInputError(f"--input_file_mode={self.input_file_mode!r}: expected 'r' or 'rb' "
                             "(input is always read as UTF-8 with bad bytes replaced)")
        if self.max_seq_length < MIN_MAX_SEQ_LENGTH:
            raise errors.UserInputError(
                f"--max_seq_length={self.max_seq_length} is too small: [CLS] A [SEP] B [SEP] "
                f"leaves {max(self.max_seq_length - 3, 0)} tokens for both segments, shorter than "
                f"most sentences, so nearly every pair is a sentence and a random segment "
                f"(label 1) and the sentence-order data has one class; use "
                f"--max_seq_length={MIN_MAX_SEQ_LENGTH} or more (the released models used 512)")
        for name in ("masked_lm_prob", "short_seq_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise errors.UserInputError(f"--{name}={value}: expected a probability in [0, 1]")
        for name in ("ngram", "dupe_factor", "shuffle_buffer_size"):
            if getattr(self, name) < 1:
                raise errors.UserInputError(f"--{name}={getattr(self, name)}: expected at least 1")
        if self.max_predictions_per_seq < 0 or (
                self.masked_lm_prob > 0 and self.max_predictions_per_seq < 1):
            raise errors.UserInputError(
                f"--max_predictions_per_seq={self.max_predictions_per_seq} is too small for the "
                f"masking budget: with --masked_lm_prob={self.masked_lm_prob} every sequence "
                "gets max(1, round(length x masked_lm_prob)) >= 1 predictions")

    def budget_cap_note(self):
        """A message when max_predictions_per_seq caps the budget of a full-length sequence."""
        full = masking.masking_budget(self.max_seq_length, self.masked_lm_prob, 10 ** 9)
        if self.masked_lm_prob == 0 or self.max_predictions_per_seq >= full:
            return None
        return (f"--max_predictions_per_seq={self.max_predictions_per_seq} caps the masking "
                f"budget: a full {self.max_seq_length}-token sequence would get "
                f"round({self.max_seq_length} x {self.masked_lm_prob}) = {full} predictions and "
                f"gets {self.max_predictions_per_seq} "
                f"({self.max_predictions_per_seq / self.max_seq_length:.1%} of its tokens), "
                "as in the original")
