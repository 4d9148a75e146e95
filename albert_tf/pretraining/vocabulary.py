"""What instance creation needs to know about each vocabulary id, precomputed once per run.

Masking asks two things of every token: is it the start of a word (whole-word and n-gram
masking group a word's pieces), and what replaces it. Answering per id through a table instead
of per token through string tests is most of what makes the data script fast.

The start-piece rules are the original's:
* SentencePiece: a piece starts a word if it begins with "▁" or "<", is one of the special
  punctuation pieces, or contains any character whose lowercase form is outside a-z and that
  punctuation set. The set is ASCII punctuation without `'`, `<`, `=`, `>`; the original also
  added "€"/"£" as bytes, which never equal a str piece under Python 3, so they are not here.
* WordPiece: a piece starts a word unless it begins with "##".

SentencePiece encodes text it cannot cover as the unk id, but the original applied the rule to
the unknown text itself. An unknown run of ASCII letters/punctuation inside a word (e.g. "||"
after "a") is therefore not a word start although "<unk>" is. Such tokens get the pseudo id
`unknown_continuation_id` (= vocabulary size): its start flag is 0, and it is written as the unk
id. No other id needs the surface text.
"""

import string

from albert_tf import errors
from albert_tf.text import tokenization

SPIECE_UNDERLINE = "\u2581"
_SP_SPECIAL_PIECES = frozenset(set(string.punctuation) - {"'", "<", "=", ">"})
_SP_WORD_CHARACTERS = frozenset(string.ascii_lowercase) | _SP_SPECIAL_PIECES


def is_start_piece_sp(piece):
    """The original's `_is_start_piece_sp` (see the module docstring)."""
    return (piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<")
            or piece in _SP_SPECIAL_PIECES
            or not all(char.lower() in _SP_WORD_CHARACTERS for char in piece))


def is_start_piece_bert(piece):
    """The original's `_is_start_piece_bert`: continuation pieces carry a "##" prefix."""
    return not piece.startswith("##")


class Vocabulary:
    """Special ids, per-id word-start flags and the random-replacement pool of one vocabulary."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.is_sentencepiece = tokenizer.sp_model is not None
        vocab = tokenizer.vocab
        for special in ("[CLS]", "[SEP]", "[MASK]"):
            if special not in vocab:
                raise errors.UserInputError(f"the vocabulary has no {special} token; ALBERT data needs "
                                 "[CLS], [SEP] and [MASK] (train it with build_vocab.py)")
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        self.mask_id = vocab["[MASK]"]
        # The original draws random replacements from every vocabulary entry, specials included.
        self.replacement_ids = list(vocab.values())
        self.size = max(self.replacement_ids) + 1
        is_start = is_start_piece_sp if self.is_sentencepiece else is_start_piece_bert
        flags = bytearray(self.size + 1)
        for piece, token_id in vocab.items():
            flags[token_id] = 1 if is_start(piece) else 0
        if self.is_sentencepiece:
            self.unk_id = tokenizer.sp_model.unk_id()
        else:
            self.unk_id = vocab.get("[UNK]", 0)
        self.unknown_continuation_id = self.size  # flags[size] stays 0; written as unk_id.
        self.start_flags = bytes(flags)

    @classmethod
    def from_files(cls, vocab_file, spm_model_file, do_lower_case):
        """Loads the tokenizer the way the original script did (spm model wins over vocab)."""
        return cls(tokenization.FullTokenizer(vocab_file, do_lower_case, spm_model_file))
