"""A Hugging Face `tokenizer.json` that tokenizes as the original ALBERT pipeline does:
`FullTokenizer.tokenize(preprocess_text(text, lower=do_lower_case))` with [CLS]/[SEP] around it.

Hugging Face's own converted ALBERT tokenizer splits the user-defined symbols (`-`, `(`, `.`...)
off as added tokens and gives the text after them a new "▁" (SentencePiece scores them inside
its Viterbi search instead, so "a-b" is "▁a", "-", "b"), never uses the digit-comma pieces the
original's rule rewrites, and rewrites `` and '' to ". Here every step is SentencePiece's or the
original's:

  normalizer      preprocess_text (Python's whitespace set collapsed and stripped, NFKD, every
                  character of non-zero combining class dropped, lower-cased with str.lower's
                  final sigma); the model's own SentencePiece normalizer (its precompiled
                  character map, spaces collapsed and stripped, " " -> "▁", a "▁" prefix); the
                  digit-comma rule ("000," -> "▁000", ","; for a learned piece wherever it
                  occurs, which albert_tf.huggingface.exact makes exact); cuts in the control
                  pieces.
  pre-tokenizer   splits at the cuts and before every "▁" (no piece has one inside, so
                  SentencePiece's search never crosses it).
  model           Unigram over the model's pieces and scores, user-defined pieces scored as
                  SentencePiece scores them in its search; runs of unknown characters are one
                  <unk>.
  post-processor  [CLS] A [SEP] (type 0) and [CLS] A [SEP] B [SEP] (B type 1).

Building it needs `tokenizers` and the model file; using it needs only `tokenizers` (no
sentencepiece, no protobuf). The rules taken from Python (whitespace, combining classes) are
tabulated from this Python's `unicodedata` when the file is written.
"""

import functools
import struct
import sys
import unicodedata

from absl import logging
from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors

from albert_tf import errors
from albert_tf.text import regex_classes, tokenization

SPIECE_UNDERLINE = tokenization.SPIECE_UNDERLINE
# Marks where the digit-comma rule and the control pieces are cut; the pre-tokenizer splits there
# and drops it. A combining character: preprocess_text has dropped every one from the text.
CUT = "\u0345"
# The same for the rule's approximation on learned pieces, whose steps the exact path
# (albert_tf/huggingface/exact/digit_comma.py, which has its own copy) finds by it and removes.
LEARNED_CUT = "\u0346"
# Python's str.lower() turns a capital sigma into "ς" when a cased letter precedes it (here: up
# to three case-ignorable characters between them) and none follows.
_FINAL_SIGMA = (r"(?<=\p{Cased}|\p{Cased}\p{Case_Ignorable}|\p{Cased}\p{Case_Ignorable}{2}"
                r"|\p{Cased}\p{Case_Ignorable}{3})\x{3A3}(?!\p{Case_Ignorable}*\p{Cased})")
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
_FLT_MIN = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]
SPECIAL_TOKENS = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")


class TokenizerExportError(errors.UserInputError):
    """A SentencePiece model whose tokenization tokenizer.json cannot reproduce."""


def _float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


@functools.lru_cache(maxsize=None)
def _python_classes():
    """Regex classes of the characters Python's `str.split()` splits on and of those with a
    non-zero canonical combining class (what preprocess_text drops after NFKD)."""
    spaces, combining = [], []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        char = chr(cp)
        if char.isspace():
            spaces.append(cp)
        if unicodedata.combining(char):
            combining.append(cp)
    return regex_classes.character_class(spaces), regex_classes.character_class(combining)


def read_model_proto(spm_model_file):
    """The SentencePiece ModelProto of `spm_model_file`, naming the file if it is not one."""
    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(tokenization.read_sp_model_proto(spm_model_file))
    except Exception as error:
        if isinstance(error, errors.UserInputError):
            raise
        raise TokenizerExportError(
            f"{spm_model_file}: not a valid SentencePiece model file ({error})") from error
    if not proto.pieces:
        raise TokenizerExportError(f"{spm_model_file}: not a valid SentencePiece model file "
                                   "(no pieces)")
    return proto


def _check_supported(proto, source):
    """Refuses the SentencePiece settings the pipeline above does not reproduce."""
    spec, trainer = proto.normalizer_spec, proto.trainer_spec
    problems = []
    if trainer.model_type != sentencepiece_model_pb2.TrainerSpec.UNIGRAM:
        problems.append("model_type is not unigram")
    if trainer.byte_fallback:
        problems.append("byte_fallback is on")
    if trainer.treat_whitespace_as_suffix:
        problems.append("treat_whitespace_as_suffix is on")
    if not (spec.add_dummy_prefix and spec.remove_extra_whitespaces and spec.escape_whitespaces):
        problems.append("add_dummy_prefix, remove_extra_whitespaces and escape_whitespaces are "
                        "not all on")
    kinds = {piece.type for piece in proto.pieces}
    if kinds & {_UNUSED, _BYTE}:
        problems.append("it has UNUSED or BYTE pieces")
    for name in SPECIAL_TOKENS:
        if not any(piece.piece == name for piece in proto.pieces):
            problems.append(f"it has no {name} piece")
    if problems:
        raise TokenizerExportError(f"{source}: cannot write a tokenizer.json that tokenizes as "
                                   f"this SentencePiece model does: {'; '.join(problems)}")


def digit_comma_pieces(proto):
    """The pieces the original's digit-comma rule rewrites (longer than one character, a digit
    then "," at the end): [(piece, is user-defined)]."""
    return [(piece.piece, piece.type == _USER_DEFINED) for piece in proto.pieces
            if tokenization._ends_with_digit_comma(piece.piece)]


def _vocab(proto):
    """[(piece, score)] in id order. SentencePiece scores a user-defined piece of n UTF-8 bytes
    as n * max(FLT_MIN, best normal score) - 0.1 in its search (the bonus that makes it win)."""
    best = max([_FLT_MIN] + [piece.score for piece in proto.pieces if piece.type == _NORMAL])
    vocab = []
    for piece in proto.pieces:
        if piece.type == _USER_DEFINED:
            score = len(piece.piece.encode("utf-8")) * _float32(best) - 0.1
        else:
            score = piece.score
        vocab.append((piece.piece, score))
    return vocab


def _normalizer(proto, do_lower_case):
    spaces, combining = _python_classes()
    steps = [  # preprocess_text(text, lower=do_lower_case)
        normalizers.Replace(Regex(spaces + "+"), " "),
        normalizers.Replace(Regex(r"\A | \z"), ""),
        normalizers.NFKD(),
        normalizers.Replace(Regex(combining), ""),
    ]
    if do_lower_case:  # str.lower(), whose one context rule Lowercase() lacks: final sigma
        steps += [normalizers.Replace(Regex(_FINAL_SIGMA), "\u03c2"), normalizers.Lowercase()]
    if proto.normalizer_spec.precompiled_charsmap:  # SentencePiece's own normalizer
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    steps += [
        normalizers.Replace(Regex(" +"), " "),
        normalizers.Replace(Regex(r"\A +"), ""),
        normalizers.Replace(" ", SPIECE_UNDERLINE),
        normalizers.Replace(Regex(SPIECE_UNDERLINE + r"+\z"), ""),
        normalizers.Prepend(SPIECE_UNDERLINE),
    ]
    for piece, cut in _control_cuts(proto, do_lower_case).items():
        steps.append(_insert(piece[:cut], CUT, piece[cut:]))
    pieces = sorted(digit_comma_pieces(proto), key=lambda item: -len(item[0]))
    for piece, _ in (item for item in pieces if item[1]):
        steps += _digit_comma_steps(piece)
    for piece, _ in (item for item in pieces if not item[1]):  # the exact path drops these
        steps += _digit_comma_steps(piece, LEARNED_CUT)
    return normalizers.Sequence(steps)


def _insert(before, text, after):
    """Inserts `text` between `before` and `after` wherever they occur together. It replaces one
    character (the last of `before`), so every other character keeps its place in the original
    text and the offsets transformers reports stay right."""
    behind = f"(?<={_quote(before[:-1])})" if len(before) > 1 else ""
    return normalizers.Replace(Regex(f"{behind}{_quote(before[-1])}(?={_quote(after)})"),
                               before[-1] + text)


def _quote(text):
    return "".join(f"\\x{{{ord(char):X}}}" for char in text)


def _digit_comma_steps(piece, cut=CUT):
    """The digit-comma rule for `piece`: the original re-encodes it without "▁" and comma (so
    SentencePiece's "▁" prefix comes back) and appends ","; here the piece gets a "▁" and is cut
    apart from its comma and from what follows, with `cut` (LEARNED_CUT for learned pieces,
    whose steps the exact path removes). Done as insertions when the piece is digits
    and a comma (occurrences cannot overlap), else as one replacement of the whole piece."""
    body = piece[:-1]
    if SPIECE_UNDERLINE in body[1:] or "," in body:
        digits = body.replace(SPIECE_UNDERLINE, "")
        return [normalizers.Replace(piece, f"{cut}{SPIECE_UNDERLINE}{digits}{cut},{cut}")]
    if body.startswith(SPIECE_UNDERLINE):
        start = normalizers.Replace(Regex(f"{_quote(body[0])}(?={_quote(body[1:] + ',')})"),
                                    cut + SPIECE_UNDERLINE)
    else:
        start = normalizers.Replace(Regex(f"{_quote(body[0])}(?={_quote(body[1:] + ',')})"),
                                    cut + SPIECE_UNDERLINE + body[0])
    return [start, normalizers.Replace(Regex(f"(?<={_quote(body)}),"), f"{cut},{cut}")]


def _control_cuts(proto, do_lower_case):
    """{control piece: where to cut it} for `<unk>`, `<pad>`, `[CLS]`... that can occur in the
    normalized text. SentencePiece never matches them in text, but a Unigram model in
    `tokenizers` matches every piece it holds; a cut between two characters no other piece
    holds side by side changes nothing else."""
    kinds = (_CONTROL, _UNKNOWN)
    others = [piece.piece for piece in proto.pieces if piece.type not in kinds]
    cuts = {}
    for piece in (piece.piece for piece in proto.pieces if piece.type in kinds):
        if len(piece) < 2 or (do_lower_case and piece != piece.lower()):
            continue
        cut = next((k for k in range(1, len(piece))
                    if not any(piece[k - 1:k + 1] in other for other in others)), None)
        if cut is None:
            logging.warning("%r: every pair of its characters occurs in another piece; text "
                            "that contains it is tokenized as that piece", piece)
            continue
        cuts[piece] = cut
    return cuts


def _pre_tokenizer(proto, do_lower_case):
    steps = []
    if digit_comma_pieces(proto) or _control_cuts(proto, do_lower_case):
        steps.append(pre_tokenizers.Split(Regex(f"[{CUT}{LEARNED_CUT}]"), "removed"))
    if not any(SPIECE_UNDERLINE in piece.piece[1:] for piece in proto.pieces):
        steps.append(pre_tokenizers.Split(SPIECE_UNDERLINE, "merged_with_next"))
    return pre_tokenizers.Sequence(steps) if steps else None


def build(spm_model_file, do_lower_case=True):
    """The `tokenizers.Tokenizer` of `spm_model_file` (see the module docstring)."""
    proto = read_model_proto(spm_model_file)
    _check_supported(proto, spm_model_file)
    ids = {piece.piece: index for index, piece in enumerate(proto.pieces)}
    unk_id = next(index for index, piece in enumerate(proto.pieces) if piece.type == _UNKNOWN)
    tokenizer = Tokenizer(models.Unigram(_vocab(proto), unk_id=unk_id, byte_fallback=False))
    tokenizer.normalizer = _normalizer(proto, do_lower_case)
    pre_tokenizer = _pre_tokenizer(proto, do_lower_case)
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tokenizer.decoder = decoders.Metaspace(replacement=SPIECE_UNDERLINE, prepend_scheme="always",
                                           split=True)
    tokenizer.add_special_tokens([AddedToken(name, normalized=False, special=True)
                                  for name in SPECIAL_TOKENS])
    learned = learned_digit_comma_pieces(proto)
    if learned:
        logging.warning(
            "%s: the learned pieces %s end in a digit and a comma; tokenizer.json applies the "
            "original's digit-comma rule wherever they occur, SentencePiece only where its "
            "search chooses them, so some numbers are tokenized differently; "
            "AutoTokenizer.from_pretrained(folder, trust_remote_code=True) applies it exactly",
            spm_model_file, learned[:10])
    return tokenizer


def learned_digit_comma_pieces(proto):
    """The digit-comma pieces SentencePiece learned (not user-defined), which tokenizer.json
    can only approximate."""
    return [piece for piece, user_defined in digit_comma_pieces(proto) if not user_defined]


def search_piece_lists(proto):
    """(user-defined pieces, pieces SentencePiece's search never matches in text: control
    pieces and <unk>), which the exact path (albert_tf.huggingface.exact) needs besides
    tokenizer.json to search as SentencePiece does."""
    return ([piece.piece for piece in proto.pieces if piece.type == _USER_DEFINED],
            [piece.piece for piece in proto.pieces if piece.type in (_CONTROL, _UNKNOWN)])


def write(spm_model_file, path, do_lower_case=True):
    """Writes `path` (tokenizer.json) for `spm_model_file`."""
    build(spm_model_file, do_lower_case).save(path)
