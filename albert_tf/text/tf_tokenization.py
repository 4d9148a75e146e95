"""In-graph ALBERT tokenization: raw strings -> the ids `FullTokenizer` gives, inside a SavedModel.

`InGraphTokenizer` runs `tokenization.preprocess_text` and the digit-comma rule of
`tokenization.encode_pieces` as TensorFlow ops around tensorflow-text's `SentencepieceTokenizer`,
so a serving signature can take raw text. Exactness does not rest on ICU and TensorFlow agreeing
with Python: the per-character rules (NFKD with combining marks dropped, `str.lower`, `str.isspace`,
`str.isdigit`) are tabulated from Python's own `unicodedata`/`str` at construction time and stored
in the graph, and `str.lower`'s one context rule (a capital sigma at the end of a word becomes
"ς", Unicode's Final_Sigma) is computed in the graph. (tensorflow-text's ICU-based
`normalize_utf8(..., "NFKD")` was checked and not used: its Unicode 16 tables decompose 118 code
points differently from Python 3.11's Unicode 14, and it cannot report which input character an
output character came from, which the offsets need.)

Offsets (`tokenize_with_offsets`) are byte offsets into the ORIGINAL input strings (UTF-8), start
inclusive and end exclusive, such that `input[start:end]` is the text a token came from:
  * a token starting with "▁" starts at its first non-space character (the "▁" stands for the
    whitespace before it, which is not part of the span);
  * characters that preprocessing drops (combining accents, extra whitespace) belong to no token,
    except that a dropped combining mark is included at the end of the character it follows,
    so "cafe\u0301" yields a span covering the accent too;
  * when one input character becomes several (NFKD: "ﬁ" -> "fi", "½" -> "1⁄2"), every token made
    from any part of it spans the whole character, so neighbouring spans may overlap;
  * a token that stands for no input text (the bare "▁" the digit-comma rule adds, see
    `tokenization.encode_pieces`) has an empty span (start == end) where it occurs.
For ordinary text (no NFKD expansions) the spans are exact and never overlap.
"""

import functools
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from albert_tf.text import regex_classes, tokenization

_SPACE = 0x20
_CAPITAL_SIGMA = 0x3A3
_FINAL_SIGMA = 0x3C2
# Code points worth tabulating: planes 0-3 (everything assigned up to Unicode 16 except the
# tag/variation-selector block, which is listed too). Planes 4-13 are unassigned and 15-16 are
# private use, which NFKD, lower(), isspace() and isdigit() leave alone; surrogates cannot
# occur in UTF-8.
_TABULATED_RANGES = (range(0, 0xD800), range(0xE000, 0x40000), range(0xE0000, 0xE1000))
# Character classes for Final_Sigma, probed from Python's own str.lower().
_OTHER, _CASE_IGNORABLE, _CASED = 0, 1, 2
# SentencePiece's built-in normalisers: per-character maps, none with a space inside a rule.
_BUILTIN_NORMALIZERS = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")
# RE2's largest counted repetition.
_RE2_MAX_REPEAT = 1000


def _code_points():
    for block in _TABULATED_RANGES:
        yield from block


@functools.lru_cache(maxsize=None)
def _unicode_tables():
    """Per-code-point rules of preprocess_text and encode_pieces, taken from this Python."""
    whitespace = []
    decompose_keys, decompose_values = [], []
    lower_keys, lower_values = [], []
    case_keys, case_values = [], []
    digits = []
    for cp in _code_points():
        char = chr(cp)
        if char.isspace():
            whitespace.append(cp)
        if char.isdigit():
            digits.append(cp)
        kept = "".join(c for c in unicodedata.normalize("NFKD", char)
                       if not unicodedata.combining(c))
        if kept != char:
            decompose_keys.append(cp)
            decompose_values.append([ord(c) for c in kept])
        lowered = char.lower()
        if lowered != char:
            if len(lowered) != 1:
                # Only U+0130 lowercases to two characters, and NFKD has already turned it into
                # "I" + a dropped combining dot, so lowercasing never sees it.
                if kept == char:
                    raise RuntimeError(f"U+{cp:04X}: multi-character lowercase survives NFKD")
                continue
            lower_keys.append(cp)
            lower_values.append(ord(lowered))
        # "A" + X + "Σ" ends in "ς" iff X is case-ignorable or cased; X + "Σ" iff X is cased and
        # not case-ignorable. Those are the only two facts Final_Sigma uses.
        after_cased = ("A" + char + "\u03a3").lower()[-1] == "\u03c2"
        alone = (char + "\u03a3").lower()[-1] == "\u03c2"
        if alone:
            case_keys.append(cp)
            case_values.append(_CASED)
        elif after_cased:
            case_keys.append(cp)
            case_values.append(_CASE_IGNORABLE)
    lengths = np.array([len(v) for v in decompose_values], np.int64)
    return {
        "whitespace": np.array(whitespace, np.int32),
        "decompose_keys": np.array(decompose_keys, np.int64),
        "decompose_starts": np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64),
        "decompose_lengths": lengths,
        "decompose_flat": np.array([c for v in decompose_values for c in v], np.int32),
        "lower_keys": np.array(lower_keys, np.int64),
        "lower_values": np.array(lower_values, np.int64),
        "case_keys": np.array(case_keys, np.int64),
        "case_values": np.array(case_values, np.int64),
        "digit_class": regex_classes.character_class(digits),
    }


def _static_table(keys, values, default):
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.int64),
                                            tf.constant(values, tf.int64)), default)


def _utf8_length(code_points):
    cp = tf.cast(code_points, tf.int64)
    return 1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64) + tf.cast(
        cp >= 0x10000, tf.int64)


def _exclusive_row_cumsum(counts, row_ids, row_splits):
    """Per-row exclusive cumulative sum of int64 `counts` laid out flat by `row_ids`."""
    running = tf.cumsum(counts, exclusive=True)
    padded = tf.concat([running, tf.reduce_sum(counts, keepdims=True)], axis=0)
    return running - tf.gather(tf.gather(padded, row_splits[:-1]), row_ids)


def _safe_gather(params, indices):
    """tf.gather that tolerates indices into an empty `params` (their results are unused)."""
    padded = tf.concat([params, tf.zeros([1], params.dtype)], axis=0)
    limit = tf.cast(tf.shape(params, out_type=tf.int64)[0], tf.int64)
    return tf.gather(padded, tf.clip_by_value(tf.cast(indices, tf.int64), 0, limit))


class InGraphTokenizer(tf.Module):
    """Raw strings -> ALBERT SentencePiece ids, identical to the Python path

        FullTokenizer(None, spm_model_file=...).convert_tokens_to_ids(
            FullTokenizer.tokenize(preprocess_text(text, lower=do_lower_case)))

    It is a `tf.Module`: the SentencePiece model and the Unicode tables are saved with any
    SavedModel that tracks it, and `tokenize`/`tokenize_with_offsets` are `tf.function`s over a
    `[batch]` string tensor, usable eagerly, inside other `tf.function`s and after loading.
    """

    def __init__(self, spm_model_file, do_lower_case=True, name=None):
        super().__init__(name=name)
        proto = tokenization.read_sp_model_proto(spm_model_file)
        sp_model = tokenization.load_sp_model(spm_model_file, serialized=proto)
        self.do_lower_case = bool(do_lower_case)
        self.vocab_size = sp_model.GetPieceSize()
        self.pad_id = sp_model.PieceToId("<pad>")
        self.unk_id = sp_model.unk_id()
        self.cls_id = sp_model.PieceToId("[CLS]")
        self.sep_id = sp_model.PieceToId("[SEP]")
        self.mask_id = sp_model.PieceToId("[MASK]")
        self._comma_id = sp_model.PieceToId(",")
        self.splits_at_whitespace = _splits_at_whitespace(proto)
        # Kept as a variable so the model file can be recovered from a loaded SavedModel.
        self.sp_model_proto = tf.Variable(proto, dtype=tf.string, trainable=False,
                                          name="sp_model_proto")
        self._sentencepiece = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.string)
        tables = _unicode_tables()
        self._whitespace = tf.constant(tables["whitespace"])
        self._digit_comma = "(?s).*" + tables["digit_class"] + ","
        self._decompose = _static_table(
            tables["decompose_keys"], np.arange(len(tables["decompose_keys"]), dtype=np.int64), -1)
        self._decompose_starts = tf.constant(tables["decompose_starts"])
        self._decompose_lengths = tf.constant(tables["decompose_lengths"])
        self._decompose_flat = tf.constant(tables["decompose_flat"])
        self._lower = _static_table(tables["lower_keys"], tables["lower_values"], -1)
        self._case = _static_table(tables["case_keys"], tables["case_values"], _OTHER)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def preprocess(self, strings):
        """`tokenization.preprocess_text(s, lower=do_lower_case)` for each string, in the graph."""
        return self._preprocess(strings)[0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize(self, strings):
        """[batch] strings -> RaggedTensor [batch, (tokens)] int32 ids; "" gives no tokens."""
        text = self._preprocess(strings, with_offsets=False)[0]
        return self._encode(text, with_offsets=False)[0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize_with_offsets(self, strings):
        """-> (ids, start_offsets, end_offsets): ragged int32 ids and int64 byte offsets into
        the original strings (see the module docstring for what the spans cover)."""
        text, orig_start, orig_end, byte_splits = self._preprocess(strings, with_offsets=True)
        ids, starts, ends = self._encode(text, with_offsets=True)
        starts, ends = self._to_original_offsets(text, ids, starts, ends, orig_start, orig_end,
                                                 byte_splits)
        return ids, starts, ends

    def leading_words(self, strings, words):
        """Each string cut after its first `words` whitespace-delimited words that contain
        printable ASCII, or whole when it has fewer; its first `words` pieces are unchanged.

        Why the pieces cannot change: the cut falls on ASCII whitespace, where preprocessing
        (strip, whitespace collapsing, per-character NFKD and lowercasing, Final_Sigma, whose
        context stops at a space) ends a word, and SentencePiece (a built-in per-character
        normaliser, no piece with "▁" after its first character) starts a piece, so every
        kept word is split into the pieces it gets in the whole text. A word with printable
        ASCII keeps that character through NFKD, lowercasing and SentencePiece's
        normalisation, so it yields at least one piece: the kept words give at least `words`
        pieces. Without those SentencePiece properties, or beyond RE2's repetition limit,
        strings are returned whole.
        """
        if not self.splits_at_whitespace or words > _RE2_MAX_REPEAT:
            return strings
        # Per repetition: words without printable ASCII, then one with it, then the
        # whitespace that ends it. RE2's \s is [\t\n\f\r ], all of them str.isspace().
        word = r"\s*(?:[^\s!-~]+\s+)*\S*[!-~]\S*\s"
        rest = tf.strings.regex_replace(strings, f"^(?:{word}){{{words}}}", "",
                                        replace_global=False)
        length = tf.strings.length(strings)
        matched = length - tf.strings.length(rest)  # a match ends in whitespace: never empty
        return tf.strings.substr(strings, tf.zeros_like(length),
                                 tf.where(matched > 0, matched, length))

    # ----------------------------------------------------------------------------------------
    # preprocess_text

    def _preprocess(self, strings, with_offsets=True):
        """Returns the preprocessed strings and, per preprocessed byte, the original byte span
        of the character it came from (flat, with per-row byte splits)."""
        code_points, char_starts = tf.strings.unicode_decode_with_offsets(
            strings, "UTF-8", errors="ignore")
        row_splits = code_points.row_splits
        row_ids = code_points.value_rowids()
        num_rows = code_points.nrows()
        cp = code_points.flat_values
        num_chars = tf.shape(cp, out_type=tf.int64)[0]
        position = tf.range(num_chars) - tf.gather(row_splits, row_ids)
        first_in_row = tf.equal(position, 0)

        # " ".join(s.strip().split()): keep the first character of each inner whitespace run.
        is_space = tf.reduce_any(tf.equal(cp[:, None], self._whitespace[None, :]), axis=1)
        not_space = tf.cast(tf.logical_not(is_space), tf.int64)
        words_before = _exclusive_row_cumsum(not_space, row_ids, row_splits)
        words_in_row = tf.gather(tf.math.unsorted_segment_sum(not_space, row_ids, num_rows),
                                 row_ids)
        previous_is_space = tf.logical_and(
            tf.concat([[False], is_space[:-1]], axis=0), tf.logical_not(first_in_row))
        keep_space = is_space & ~previous_is_space & (words_before > 0) & (
            words_before < words_in_row)
        keep = tf.logical_not(is_space) | keep_space
        cp = tf.where(is_space, tf.constant(_SPACE, tf.int32), cp)

        # NFKD minus combining characters, one character at a time (exact: dropping every
        # combining character makes canonical reordering irrelevant).
        entry = self._decompose.lookup(tf.cast(cp, tf.int64))
        has_entry = entry >= 0
        safe_entry = tf.maximum(entry, 0)
        out_length = tf.where(
            keep, tf.where(has_entry, tf.gather(self._decompose_lengths, safe_entry), 1), 0)
        source = tf.repeat(tf.range(num_chars), out_length)
        within = tf.range(tf.reduce_sum(out_length)) - tf.gather(
            tf.cumsum(out_length, exclusive=True), source)
        decomposed = tf.gather(
            self._decompose_flat, tf.gather(tf.gather(self._decompose_starts, safe_entry),
                                            source) + within)
        values = tf.where(tf.gather(has_entry, source), decomposed, tf.gather(cp, source))
        out_rows = tf.gather(row_ids, source)
        if self.do_lower_case:
            values = self._lowercase(values, out_rows)
        text = tf.strings.unicode_encode(
            tf.RaggedTensor.from_value_rowids(values, out_rows, nrows=num_rows, validate=False),
            "UTF-8")
        if not with_offsets:
            return (text,)

        # Original byte span per source character; a dropped combining mark (no output, not
        # whitespace) extends the span of the character before it.
        char_ends = char_starts.flat_values + _utf8_length(code_points.flat_values)
        absorbed = keep & tf.logical_not(is_space) & tf.equal(out_length, 0) & tf.logical_not(
            first_in_row)
        group = tf.cumsum(tf.cast(tf.logical_not(absorbed), tf.int64)) - 1
        span_end = tf.gather(tf.math.unsorted_segment_max(char_ends, group, num_chars), group)
        out_bytes = _utf8_length(values)
        byte_source = tf.repeat(source, out_bytes)
        byte_splits = tf.concat(
            [[0], tf.cumsum(tf.math.unsorted_segment_sum(out_bytes, out_rows, num_rows))], axis=0)
        return (text, tf.gather(char_starts.flat_values, byte_source),
                tf.gather(span_end, byte_source), byte_splits)

    def _lowercase(self, values, rows):
        """str.lower() of the concatenated characters of each row, Final_Sigma included."""
        wide = tf.cast(values, tf.int64)
        lowered = self._lower.lookup(wide)
        lowered = tf.where(lowered >= 0, lowered, wide)
        # Final_Sigma: "Σ" -> "ς" when the nearest non-case-ignorable character before it is
        # cased and the nearest one after it (if any) is not.
        case = self._case.lookup(wide)
        anchor = tf.not_equal(case, _CASE_IGNORABLE)
        anchor_positions = tf.where(anchor)[:, 0]
        anchors_through = tf.cumsum(tf.cast(anchor, tf.int64))
        anchors_before = anchors_through - tf.cast(anchor, tf.int64)
        num_anchors = tf.shape(anchor_positions, out_type=tf.int64)[0]
        prev_position = _safe_gather(anchor_positions, anchors_before - 1)
        prev_cased = (anchors_before > 0) & tf.equal(_safe_gather(rows, prev_position), rows) & (
            tf.equal(_safe_gather(case, prev_position), _CASED))
        next_position = _safe_gather(anchor_positions, anchors_through)
        next_cased = (anchors_through < num_anchors) & tf.equal(
            _safe_gather(rows, next_position), rows) & tf.equal(
                _safe_gather(case, next_position), _CASED)
        final_sigma = tf.equal(wide, _CAPITAL_SIGMA) & prev_cased & tf.logical_not(next_cased)
        return tf.cast(tf.where(final_sigma, tf.constant(_FINAL_SIGMA, tf.int64), lowered),
                       tf.int32)

    # ----------------------------------------------------------------------------------------
    # encode_pieces

    def _encode(self, text, with_offsets):
        """SentencePiece pieces with the digit-comma rule, as ids (and preprocessed-text byte
        offsets). A piece ending in digit + "," becomes the pieces of its text without "▁" and
        comma, then ","; the leading "▁" that re-encoding adds is kept (see encode_pieces)."""
        pieces, starts, ends = self._sentencepiece.tokenize_with_offsets(text)
        flat = pieces.flat_values
        ids = tf.cast(self._sentencepiece.string_to_id(flat), tf.int32)
        split = tf.strings.regex_full_match(flat, self._digit_comma)
        lengths = tf.strings.length(flat)
        stripped = tf.strings.regex_replace(
            tf.strings.substr(flat, tf.zeros_like(lengths), lengths - 1),
            tokenization.SPIECE_UNDERLINE, "")
        sub_pieces, sub_starts, sub_ends = self._sentencepiece.tokenize_with_offsets(
            tf.boolean_mask(stripped, split))
        sub_ids = sub_pieces.with_flat_values(
            tf.cast(self._sentencepiece.string_to_id(sub_pieces.flat_values), tf.int32))
        num_split = tf.shape(sub_ids.row_splits, out_type=tf.int64)[0] - 1
        comma = tf.RaggedTensor.from_tensor(tf.fill([num_split, 1], self._comma_id))
        kept = tf.logical_not(split)

        def per_piece(unsplit_values, split_rows):
            """Merges [kept piece] and [re-encoded pieces..., ","] rows back into piece order."""
            num_kept = tf.reduce_sum(tf.cast(kept, tf.int64))
            unsplit_rows = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(unsplit_values, kept), tf.ones([num_kept], tf.int64),
                validate=False)
            order = tf.where(split,
                             num_kept + tf.cumsum(tf.cast(split, tf.int64), exclusive=True),
                             tf.cumsum(tf.cast(kept, tf.int64), exclusive=True))
            merged = tf.gather(tf.concat([unsplit_rows, split_rows], axis=0), order)
            return tf.RaggedTensor.from_row_splits(merged, pieces.row_splits,
                                                   validate=False).merge_dims(1, 2)

        out_ids = per_piece(ids, tf.concat([sub_ids, comma], axis=1))
        if not with_offsets:
            return (out_ids,)
        # Re-encoded pieces lie in the piece's text just before its comma.
        piece_start = tf.boolean_mask(starts.flat_values, split)
        comma_start = tf.boolean_mask(ends.flat_values, split) - 1
        base = tf.maximum(piece_start, comma_start - tf.cast(
            tf.strings.length(tf.boolean_mask(stripped, split)), tf.int64))

        def place(sub_offsets):
            rows = sub_offsets.value_rowids()
            moved = tf.clip_by_value(sub_offsets.flat_values + tf.gather(base, rows),
                                     tf.gather(piece_start, rows), tf.gather(comma_start, rows))
            return sub_offsets.with_flat_values(moved)

        comma_starts = tf.RaggedTensor.from_tensor(tf.expand_dims(comma_start, 1))
        out_starts = per_piece(starts.flat_values,
                               tf.concat([place(sub_starts), comma_starts], axis=1))
        out_ends = per_piece(ends.flat_values,
                             tf.concat([place(sub_ends), comma_starts + 1], axis=1))
        return out_ids, out_starts, out_ends

    @staticmethod
    def _to_original_offsets(text, ids, starts, ends, orig_start, orig_end, byte_splits):
        """Maps preprocessed-text byte offsets to original-string byte offsets."""
        rows = ids.value_rowids()
        start = starts.flat_values
        end = ends.flat_values
        span = tf.strings.substr(tf.gather(text, rows), start, end - start)
        leading_spaces = tf.cast(
            tf.strings.length(span) - tf.strings.length(tf.strings.regex_replace(span, "^ +", "")),
            tf.int64)
        start = start + leading_spaces
        row_base = tf.gather(byte_splits, rows)
        row_bytes = tf.gather(byte_splits[1:], rows) - row_base
        empty = end <= start
        at_text_end = start >= row_bytes
        # An empty span sits where the next character starts, or at the end of the last one.
        anchor = tf.where(at_text_end,
                          _safe_gather(orig_end, row_base + row_bytes - 1),
                          _safe_gather(orig_start, row_base + start))
        anchor = tf.where(at_text_end & tf.equal(row_bytes, 0), tf.zeros_like(anchor), anchor)
        new_start = tf.where(empty, anchor, _safe_gather(orig_start, row_base + start))
        new_end = tf.where(empty, anchor, _safe_gather(orig_end, row_base + end - 1))
        return ids.with_flat_values(new_start), ids.with_flat_values(new_end)


def _splits_at_whitespace(proto_bytes):
    """Whether SentencePiece starts a piece at every space, so text can be cut there."""
    proto = sentencepiece_model_pb2.ModelProto.FromString(proto_bytes)
    spec = proto.normalizer_spec
    return (not proto.trainer_spec.treat_whitespace_as_suffix
            and spec.name in _BUILTIN_NORMALIZERS and not spec.normalization_rule_tsv
            and all(tokenization.SPIECE_UNDERLINE not in piece.piece[1:]
                    for piece in proto.pieces))


def pack_inputs(segments, max_seq_length, cls_id, sep_id):
    """Packs one or two ragged id segments [batch, (n)] into the model's dense int32 inputs.

    Layout `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`; `segment_ids` are 0 through the first
    [SEP] and 1 after it; padding is 0 with `input_mask` 0. Truncation is the original's: a
    single segment is cut to max_seq_length - 2; a pair to max_seq_length - 3 by removing the
    last token of the longer segment until it fits (ties take from the second). That is exactly
    the allocation tensorflow-text's RoundRobinTrimmer makes, which is what runs here. A row
    whose second segment is empty is packed like a single segment (no second [SEP], budget
    max_seq_length - 2), as the original does for an empty `text_b`.
    Returns {"input_ids", "input_mask", "segment_ids"}, each int32 [batch, max_seq_length].
    """
    if len(segments) not in (1, 2):
        raise ValueError(f"pack_inputs takes 1 or 2 segments, got {len(segments)}")
    if max_seq_length < 2 + len(segments):
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for a token of "
                         f"{len(segments)} segment(s) and the [CLS]/[SEP] markers")
    first = tf.cast(segments[0], tf.int32)
    parts = [first[:, : max_seq_length - 2]]
    if len(segments) == 2:
        second = tf.cast(segments[1], tf.int32)
        first_pair, second_pair = tf_text.RoundRobinTrimmer(max_seq_length - 3).trim(
            [first, second])
        has_second = second.row_lengths() > 0
        first_length = tf.where(has_second, first_pair.row_lengths(),
                                parts[0].row_lengths())
        position = tf.ragged.range(first.row_lengths())
        keep = position.flat_values < tf.gather(first_length, position.value_rowids())
        parts = [tf.ragged.boolean_mask(first, position.with_flat_values(keep)), second_pair]
    batch = parts[0].nrows()
    marker = tf.RaggedTensor.from_tensor(tf.ones([batch, 1], tf.int32))
    pieces = [marker * cls_id, parts[0], marker * sep_id]
    types = [marker * 0, tf.zeros_like(parts[0]), marker * 0]
    if len(parts) == 2:
        # Like the original's `if tokens_b:` after truncation: a second segment that is empty
        # (or truncated away, possible only when max_seq_length is 4) gets no closing [SEP].
        closes = tf.cast(parts[1].row_lengths() > 0, tf.int64)
        closing = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(closes)], tf.constant(sep_id, tf.int32)), closes,
            validate=False)
        pieces += [parts[1], closing]
        types += [tf.ones_like(parts[1]), tf.ones_like(closing)]
    input_ids, input_mask = tf_text.pad_model_inputs(tf.concat(pieces, axis=1), max_seq_length)
    segment_ids, _ = tf_text.pad_model_inputs(tf.concat(types, axis=1), max_seq_length)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
