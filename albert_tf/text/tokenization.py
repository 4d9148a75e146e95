"""The original ALBERT tokenization module: SentencePiece (ALBERT) and WordPiece (BERT) paths.

Public names and behaviour follow google-research/ALBERT `tokenization.py` as it runs under
Python 3, so data made here matches the data the released
models were trained on:

* `preprocess_text` collapses whitespace, NFKD-normalises, ALWAYS drops combining marks (there
  is no keep-accents option) and optionally lowercases. It does not rewrite `` / '' quotes.
* `encode_pieces` applies the digit-comma rule (see its docstring) without stripping the
  spurious leading "▁" that rule can create, exactly like the original under Python 3.
* `FullTokenizer.tokenize` on the SentencePiece path does NOT preprocess or lowercase; callers
  run `preprocess_text` first (as every original script does).

Differences from the original, all deliberate: no log line on every id conversion, clear
errors naming a missing or unreadable model/vocabulary file (a directory, no read permission,
bytes that are not UTF-8, a WordPiece vocabulary without [UNK]/[CLS]/[SEP]), and
`preprocess_text` also accepts UTF-8 bytes.
"""

import collections
import unicodedata

import sentencepiece as spm

from albert_tf import errors
from albert_tf.files import input_files

SPIECE_UNDERLINE = "\u2581"


# --------------------------------------------------------------------------------------------
# str / bytes helpers (the original's Python 2/3 shims; under Python 3 both return str).


def convert_to_unicode(text):
    """Returns `text` as str, decoding bytes as UTF-8 and ignoring undecodable bytes."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def printable_text(text):
    """Returns `text` as str for printing/logging (identical to convert_to_unicode in Python 3)."""
    return convert_to_unicode(text)


# --------------------------------------------------------------------------------------------
# SentencePiece path.


def preprocess_text(inputs, remove_space=True, lower=False):
    """Normalises raw text the way the ALBERT vocabulary and models expect.

    With `remove_space`, runs of whitespace (Python's `str.split` notion of whitespace) become
    one space and the ends are stripped. Then NFKD, then every character with a non-zero
    canonical combining class is dropped (accents go even when `lower` is False), then the
    text is lowercased if `lower`. Whitespace is collapsed BEFORE NFKD, so spaces that NFKD
    itself introduces (e.g. U+00A8 "¨" becomes " " + combining diaeresis) are kept as they are.
    """
    outputs = convert_to_unicode(inputs)
    if remove_space:
        outputs = " ".join(outputs.strip().split())
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs


def _ends_with_digit_comma(piece):
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def encode_pieces(sp_model, text, return_unicode=True, sample=False):
    """Splits text into SentencePiece pieces with the original's digit-comma rule.

    A piece longer than one character that ends in a digit followed by "," (e.g. "▁1,000,")
    is re-encoded without its comma and without any "▁", and the "," is appended as its own
    piece. The original then meant to drop a leading "▁" that the re-encoding adds to a piece
    that had none (e.g. "000," -> "▁", "0", "0", "0", ","), but its test compared a one-
    character str with the 3-byte UTF-8 encoding of "▁" (b"\\xe2\\x96\\x81"), which is never
    equal in Python 3 (nor in Python 2, where it compared one byte). The released models were
    trained on data with that spurious "▁", so it is deliberately kept here.

    `return_unicode` is accepted for compatibility; this function always returns str pieces.
    The original, under Python 3 with sentencepiece 0.2.1, returned the re-encoded pieces of the
    digit-comma path as UTF-8 bytes (it encoded the piece to bytes before re-encoding, and
    sentencepiece answers bytes input with bytes pieces) beside str pieces everywhere else; the
    ids (`PieceToId` takes both) are the same. `sample=True` uses subword sampling (nbest 64,
    alpha 0.1) for the first encoding, as the original did.
    """
    text = convert_to_unicode(text)
    del return_unicode  # Always str pieces (see docstring).
    if sample:
        pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
    else:
        pieces = sp_model.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        piece = printable_text(piece)
        if not _ends_with_digit_comma(piece):
            new_pieces.append(piece)
            continue
        # No leading-"▁" strip here: the original's strip never fired (see docstring).
        new_pieces.extend(sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
        new_pieces.append(",")
    return new_pieces


def encode_ids(sp_model, text, sample=False):
    """The ids of `encode_pieces(sp_model, text)` (unknown pieces map to the unk id)."""
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def _read_file_bytes(path, what):
    """Reads a local or `gs://`-style file; a missing, unreadable or directory path is an error
    naming it and what it is."""
    return input_files.read_bytes(convert_to_unicode(path), f"{what} file")


def read_sp_model_proto(spm_model_file):
    """The bytes of a SentencePiece model file (local or remote), naming the file on failure."""
    return _read_file_bytes(spm_model_file, "SentencePiece model (--spm_model_file)")


def load_sp_model(spm_model_file, serialized=None):
    """Loads a SentencePiece model (from `serialized` bytes if given, else from the file),
    raising an error that names the file when it is missing or not a model."""
    if serialized is None:
        serialized = read_sp_model_proto(spm_model_file)
    sp_model = spm.SentencePieceProcessor()
    try:
        sp_model.LoadFromSerializedProto(serialized)
    except Exception as error:
        raise errors.UserInputError(
            f"{spm_model_file}: not a valid SentencePiece model file ({error})") from error
    return sp_model


# --------------------------------------------------------------------------------------------
# WordPiece (BERT) path, used by WordPiece vocabularies such as the Chinese models'.


def load_vocab(vocab_file):
    """Reads a vocabulary: the first whitespace field of each line, ids by first occurrence.

    A whitespace-only line stands for the token " ". A token seen again later keeps its first
    id and the repeated line gets no id (ids stay contiguous), as in the original.
    """
    text = input_files.decode_utf8(_read_file_bytes(vocab_file, "vocabulary (--vocab_file)"),
                                   vocab_file)  # dropping bad bytes would shift the tokens
    vocab = collections.OrderedDict()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # A final newline ends the last line; it does not start an empty one.
    for line in lines:
        fields = line.split()
        token = fields[0] if fields else " "
        if token not in vocab:
            vocab[token] = len(vocab)
    return vocab


WORDPIECE_SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]")


def _check_special_tokens(vocab, vocab_file):
    """An empty file, or one without the tokens every input uses, would turn each word into
    [UNK] or fail with a KeyError on the first [CLS]: refuse it, naming what is missing."""
    missing = [token for token in WORDPIECE_SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise errors.UserInputError(
            f"{vocab_file}: not a WordPiece vocabulary for ALBERT/BERT: "
            + ("it is empty" if not vocab else f"{len(vocab)} tokens but no {', '.join(missing)}")
            + f" (expected one token per line including {', '.join(WORDPIECE_SPECIAL_TOKENS)})")


def convert_by_vocab(vocab, items):
    """Maps tokens to ids (or ids to tokens) through `vocab`, naming any missing item."""
    output = []
    for item in items:
        try:
            output.append(vocab[item])
        except KeyError:
            raise KeyError(f"{item!r} is not in the vocabulary") from None
    return output


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
    """Splits on whitespace after stripping; empty text gives []."""
    return text.split()


def _is_whitespace(char):
    """Space, tab, newline, carriage return and Unicode category Zs."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char):
    """Categories Cc/Cf, except tab, newline and carriage return (treated as whitespace)."""
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """All non-letter, non-digit ASCII symbols (so "^", "$", "`" count) and Unicode P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Whether the code point lies in a CJK Unified Ideographs (or compatibility) block."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class BasicTokenizer:
    """BERT's pre-tokenizer: clean text, space out CJK, optional lowercase + accent strip,
    split punctuation."""

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        text = self._tokenize_chinese_chars(self._clean_text(convert_to_unicode(text)))
        split_tokens = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text):
        """NFD, then drop nonspacing marks (category Mn)."""
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text):
        """Every punctuation character becomes its own token."""
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append(char)
                start_new_word = True
            elif start_new_word:
                output.append(char)
                start_new_word = False
            else:
                output[-1] += char
        return output

    @staticmethod
    def _tokenize_chinese_chars(text):
        return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)

    @staticmethod
    def _clean_text(text):
        """Drops NUL, U+FFFD and control characters; every whitespace character becomes " "."""
        output = []
        for char in text:
            if ord(char) in (0, 0xFFFD) or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece; continuation pieces carry a "##" prefix."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        """E.g. "unaffable" -> ["un", "##aff", "##able"]; a word that cannot be covered, or is
        longer than max_input_chars_per_word characters, becomes the unk token."""
        output_tokens = []
        for word in whitespace_tokenize(convert_to_unicode(text)):
            output_tokens.extend(self._tokenize_word(word))
        return output_tokens

    def _tokenize_word(self, word):
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    pieces.append(candidate)
                    start = end
                    break
            else:
                return [self.unk_token]
        return pieces


# --------------------------------------------------------------------------------------------


class FullTokenizer:
    """End-to-end tokenizer: SentencePiece when `spm_model_file` is given, else WordPiece.

    On the SentencePiece path `vocab` maps every piece (including `<pad>`, `<unk>`, `[CLS]`,
    `[SEP]`, `[MASK]`) to its id, `vocab_file` and `do_lower_case` are ignored, and
    `tokenize` expects text already passed through `preprocess_text`.
    """

    def __init__(self, vocab_file, do_lower_case=True, spm_model_file=None):
        self.sp_model = None
        if spm_model_file:
            self.sp_model = load_sp_model(spm_model_file)
            self.vocab = {self.sp_model.IdToPiece(i): i
                          for i in range(self.sp_model.GetPieceSize())}
        else:
            if not vocab_file:
                raise ValueError("FullTokenizer needs a vocab_file or an spm_model_file")
            self.vocab = load_vocab(vocab_file)
            _check_special_tokens(self.vocab, vocab_file)
            self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}

    @classmethod
    def from_scratch(cls, vocab_file, do_lower_case, spm_model_file):
        return cls(vocab_file, do_lower_case, spm_model_file)

    def tokenize(self, text):
        if self.sp_model:
            return encode_pieces(self.sp_model, text, return_unicode=False)
        return [piece
                for token in self.basic_tokenizer.tokenize(text)
                for piece in self.wordpiece_tokenizer.tokenize(token)]

    def convert_tokens_to_ids(self, tokens):
        """SentencePiece: unknown pieces become the unk id. WordPiece: unknown tokens raise."""
        if self.sp_model:
            return [self.sp_model.PieceToId(printable_text(token)) for token in tokens]
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        if self.sp_model:
            return [self.sp_model.IdToPiece(int(id_)) for id_ in ids]
        return convert_by_vocab(self.inv_vocab, ids)
