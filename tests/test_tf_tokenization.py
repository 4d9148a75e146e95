"""albert_tf.text.tf_tokenization: the in-graph tokenizer against the Python FullTokenizer path,
offsets into the original text, pack_inputs against the original truncation, SavedModel use."""

import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export import preprocessor as preprocessor_module
from albert_tf.text import tf_tokenization, tokenization
from tests import real_lines

# Hand-picked text that exercises every per-character rule: Unicode whitespace, Final_Sigma,
# multi-character NFKD, combining marks (also leading and doubled), full-width digits before a
# comma, non-ASCII digits, Hangul, NUL, a BOM, the empty string and whitespace only.
UNICODE_CASES = [
    "ΌΣΟΣ ΣΑΣ Σ aΣ.b ὈΔΥΣΣΕΎΣ aΣ\u0345b",
    "İstanbul ǅ ﬁne ½ a ¨b",
    "",
    "   ",
    "\u00a0x\u2028y\x1c z \u3000",
    "1,000,000, 5, ٣,x ¹²,",
    "cafe\u0301 naïve",
    "\ufeffhello",
    "a\u0301\u0301b",
    "\u0301start",
    "ＡＢＣ１２３,",
    "𝚺𝚺 𝐀𝚺",
    "ß ẞ Ǆ",
    "한국어 텍스트",
    "x\x00y\ty",
    "The ``quote'' and it's $1,000, (or 2,500,000,) -- £5 €6 – ok",
]


def python_ids(full_tokenizer, text, lower):
    return full_tokenizer.convert_tokens_to_ids(
        full_tokenizer.tokenize(tokenization.preprocess_text(text, lower=lower)))


@pytest.fixture(scope="module")
def lines(real_data):
    return real_lines.load(real_data)


@pytest.fixture(scope="module")
def tokenizers(digit_comma_spm_model_file):
    """{lower: (InGraphTokenizer, FullTokenizer)} on the model with "000," pieces."""
    full = tokenization.FullTokenizer(None, spm_model_file=digit_comma_spm_model_file)
    return {lower: (tf_tokenization.InGraphTokenizer(digit_comma_spm_model_file, lower), full)
            for lower in (True, False)}


@pytest.mark.parametrize("lower", [True, False])
def test_unicode_cases_match_python(tokenizers, lower):
    in_graph, full = tokenizers[lower]
    preprocessed = in_graph.preprocess(tf.constant(UNICODE_CASES)).numpy()
    assert [p.decode("utf-8") for p in preprocessed] == [
        tokenization.preprocess_text(text, lower=lower) for text in UNICODE_CASES]
    assert in_graph.tokenize(tf.constant(UNICODE_CASES)).to_list() == [
        python_ids(full, text, lower) for text in UNICODE_CASES]


def test_invalid_utf8_is_dropped_like_python(tokenizers):
    in_graph, full = tokenizers[True]
    raw = [b"a\xffb", b"\xe2\x96x y", b"caf\xc3", b"\xf0\x9f\x98", b"\xc0\xafq", b"ok\x80\x80 1,000,"]
    assert in_graph.preprocess(tf.constant(raw)).numpy().tolist() == [
        tokenization.preprocess_text(text, lower=True).encode("utf-8") for text in raw]
    assert in_graph.tokenize(tf.constant(raw)).to_list() == [
        python_ids(full, text, True) for text in raw]


def test_final_sigma_is_computed_in_the_graph(tokenizers):
    in_graph, _ = tokenizers[True]
    texts = ["ΣΑΣ", "ΑΣ.", "Σ", "aΣ\u0345b", "ΑΣ'Α"]
    got = [p.decode("utf-8") for p in in_graph.preprocess(tf.constant(texts)).numpy()]
    assert got == [tokenization.preprocess_text(t, lower=True) for t in texts]
    assert got == ["σας", "ας.", "σ", "aσb", "ασ'α"]  # "'" is case-ignorable, "Α" is cased


def test_empty_strings_give_empty_segments(tokenizers):
    in_graph, _ = tokenizers[True]
    ids, starts, ends = in_graph.tokenize_with_offsets(tf.constant(["", " \t ", "a"]))
    assert ids.row_lengths().numpy().tolist()[:2] == [0, 0]
    assert ids.dtype == tf.int32 and starts.dtype == tf.int64
    assert starts.row_lengths().numpy().tolist() == ids.row_lengths().numpy().tolist()


@pytest.mark.slow
@pytest.mark.parametrize("lower", [True, False])
def test_real_lines_match_full_tokenizer(tokenizers, lines, lower):
    in_graph, full = tokenizers[lower]
    assert len(lines) >= 10000
    batch = tf.constant(lines)
    preprocessed = in_graph.preprocess(batch).numpy()
    expected_text = [tokenization.preprocess_text(line, lower=lower) for line in lines]
    assert [p.decode("utf-8") for p in preprocessed] == expected_text
    got = in_graph.tokenize(batch).to_list()
    expected = [python_ids(full, line, lower) for line in lines]
    assert got == expected
    # The digit-comma rule really ran: some lines contain the spurious bare "▁" it adds.
    bare = full.sp_model.PieceToId(tokenization.SPIECE_UNDERLINE)
    assert sum(ids.count(bare) for ids, line in zip(got, lines) if "000," in line) > 0


@pytest.mark.slow
def test_brown_4k_model_matches_full_tokenizer(spm_model_file, lines):
    in_graph = tf_tokenization.InGraphTokenizer(spm_model_file, do_lower_case=True)
    full = tokenization.FullTokenizer(None, spm_model_file=spm_model_file)
    assert in_graph.tokenize(tf.constant(lines)).to_list() == [
        python_ids(full, line, True) for line in lines]


# ---------------------------------------------------------------------------------------------
# Offsets


def _spans(in_graph, full, texts):
    ids, starts, ends = in_graph.tokenize_with_offsets(tf.constant(texts))
    out = []
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(),
                                                   ends.to_list()):
        raw = text.encode("utf-8")
        out.append([(full.sp_model.IdToPiece(i), raw[s:e].decode("utf-8"))
                    for i, s, e in zip(row_ids, row_starts, row_ends)])
    return out


def test_offsets_hand_written(tokenizers):
    in_graph, full = tokenizers[True]
    spans = _spans(in_graph, full, ["  Héllo   WORLD 1,000,000, x", "cafe\u0301 ﬁne"])
    first = spans[0]
    # Pieces that start with "▁" start at their first character, not at the space before.
    assert "".join(text for _, text in first) == "HélloWORLD1,000,000,x"
    assert all(text == "" for piece, text in first if piece == "▁")
    # The digit-comma re-encoding: every comma maps to a ",", the zeros to "0"s.
    assert [text for piece, text in first if piece == ","] == [",", ",", ","]
    second = [text for _, text in spans[1]]
    # The dropped accent joins the span of its letter; "ﬁ" -> "fi" spans the whole ligature,
    # in every token made from it (this model splits "fi", so two spans hold the ligature).
    assert "".join(second) == "cafe\u0301ﬁﬁne"
    assert any(text.endswith("e\u0301") for text in second)
    assert not any(text.startswith("\u0301") for text in second)


def test_offsets_cover_the_original_text_of_each_piece(tokenizers, lines):
    """For every piece that is not <unk> or a bare "▁", preprocessing its span gives the piece's
    text, spans never go backwards, and on ASCII lines they never overlap."""
    for lower in (True, False):
        in_graph, full = tokenizers[lower]
        sample = lines[::7] + UNICODE_CASES
        ids, starts, ends = in_graph.tokenize_with_offsets(tf.constant(sample))
        for text, row_ids, row_starts, row_ends in zip(
                sample, ids.to_list(), starts.to_list(), ends.to_list()):
            raw = text.encode("utf-8")
            previous_end = 0
            for token_id, start, end in zip(row_ids, row_starts, row_ends):
                assert 0 <= start <= end <= len(raw)
                piece = full.sp_model.IdToPiece(token_id)
                if text.isascii():
                    assert start >= previous_end, (text, piece)
                previous_end = max(previous_end, end)
                if token_id == full.sp_model.unk_id() or piece == tokenization.SPIECE_UNDERLINE:
                    continue
                span = raw[start:end].decode("utf-8")
                if text.isascii():
                    assert tokenization.preprocess_text(span, lower=lower) == piece.lstrip("▁"), (
                        text, piece, span)
                else:
                    assert piece.lstrip("▁") in tokenization.preprocess_text(span, lower=lower), (
                        text, piece, span)


# ---------------------------------------------------------------------------------------------
# pack_inputs


def original_pack(tokens_a, tokens_b, max_seq_length, cls_id, sep_id):
    """A transcription of the original convert_single_example + _truncate_seq_pair."""
    tokens_a = list(tokens_a)
    tokens_b = list(tokens_b) if tokens_b else None  # `if example.text_b:` in the original
    if tokens_b:
        while len(tokens_a) + len(tokens_b) > max_seq_length - 3:
            if len(tokens_a) > len(tokens_b):
                tokens_a.pop()
            else:
                tokens_b.pop()
    else:
        tokens_a = tokens_a[: max_seq_length - 2]
    ids = [cls_id] + tokens_a + [sep_id]
    segment_ids = [0] * len(ids)
    if tokens_b:
        ids += tokens_b + [sep_id]
        segment_ids += [1] * (len(tokens_b) + 1)
    mask = [1] * len(ids)
    padding = [0] * (max_seq_length - len(ids))
    return ids + padding, mask + padding, segment_ids + padding


def test_pack_inputs_matches_original_truncation():
    rng = random.Random(7)
    for max_seq_length in (3, 4, 5, 8, 17, 64):
        for num_segments in (1, 2):
            if max_seq_length < 2 + num_segments:
                continue
            rows = [[[rng.randrange(5, 999) for _ in range(rng.choice([0, 1, 2, rng.randrange(0, 80)]))]
                     for _ in range(num_segments)] for _ in range(60)]
            segments = [tf.ragged.constant([row[k] for row in rows], dtype=tf.int32,
                                           row_splits_dtype=tf.int64) for k in range(num_segments)]
            packed = tf_tokenization.pack_inputs(segments, max_seq_length, cls_id=2, sep_id=3)
            for name in ("input_ids", "input_mask", "segment_ids"):
                assert packed[name].dtype == tf.int32
                assert packed[name].shape == (60, max_seq_length)
            for i, row in enumerate(rows):
                expected = original_pack(row[0], row[1] if num_segments == 2 else None,
                                         max_seq_length, 2, 3)
                got = tuple(packed[name][i].numpy().tolist()
                            for name in ("input_ids", "input_mask", "segment_ids"))
                assert got == expected, (max_seq_length, row)


def test_pack_inputs_hand_written_and_errors():
    a = tf.ragged.constant([[10, 11, 12, 13, 14], [20]])
    b = tf.ragged.constant([[30, 31, 32], []])
    packed = tf_tokenization.pack_inputs([a, b], 8, cls_id=2, sep_id=3)
    assert packed["input_ids"].numpy().tolist() == [[2, 10, 11, 12, 3, 30, 31, 3],
                                                    [2, 20, 3, 0, 0, 0, 0, 0]]
    assert packed["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0] * 8]
    assert packed["input_mask"].numpy().tolist() == [[1] * 8, [1, 1, 1, 0, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="1 or 2 segments"):
        tf_tokenization.pack_inputs([a, b, a], 8, 2, 3)
    with pytest.raises(ValueError, match="max_seq_length=3"):
        tf_tokenization.pack_inputs([a, b], 3, 2, 3)


# ---------------------------------------------------------------------------------------------
# tf.function and SavedModel


class _TextToInputs(tf.Module):
    """What a raw-text serving signature does: tokenize two texts and pack them."""

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def __call__(self, text_a, text_b):
        return tf_tokenization.pack_inputs(
            [self.tokenizer.tokenize(text_a), self.tokenizer.tokenize(text_b)], 16,
            self.tokenizer.cls_id, self.tokenizer.sep_id)


@pytest.mark.slow
def test_saved_model_round_trip(tmp_path, tokenizers, digit_comma_spm_model_file):
    in_graph, full = tokenizers[True]
    module = _TextToInputs(in_graph)
    text_a = ["The jury said 1,000,000, or so.", "Crème brûlée ΣΑΣ", ""]
    text_b = ["It was   Friday.", "", "only b"]
    expected = module(tf.constant(text_a), tf.constant(text_b))
    tf.saved_model.save(module, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    got = loaded(tf.constant(text_a), tf.constant(text_b))
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(got[name].numpy(), expected[name].numpy())
    for i, (a, b) in enumerate(zip(text_a, text_b)):
        want = original_pack(python_ids(full, a, True), python_ids(full, b, True), 16,
                             in_graph.cls_id, in_graph.sep_id)[0]
        assert got["input_ids"][i].numpy().tolist() == want
    ids, starts, _ = loaded.tokenizer.tokenize_with_offsets(tf.constant(text_a))
    assert ids.to_list() == in_graph.tokenize(tf.constant(text_a)).to_list()
    assert starts.to_list() == in_graph.tokenize_with_offsets(tf.constant(text_a))[1].to_list()
    # The SentencePiece model travels inside the SavedModel.
    with open(digit_comma_spm_model_file, "rb") as handle:
        assert loaded.tokenizer.sp_model_proto.numpy() == handle.read()


def test_special_ids_and_missing_model(tokenizers, tmp_path):
    in_graph, _ = tokenizers[True]
    assert (in_graph.pad_id, in_graph.unk_id, in_graph.cls_id, in_graph.sep_id,
            in_graph.mask_id) == (0, 1, 2, 3, 4)
    with pytest.raises(FileNotFoundError, match="missing.model"):
        tf_tokenization.InGraphTokenizer(str(tmp_path / "missing.model"), True)


# ---------------------------------------------------------------------------------------------
# leading_words: the cut before tokenizing that bounds a text signature's memory (issue 51)


def _first_ids(in_graph, texts, count):
    return [row[:count] for row in in_graph.tokenize(tf.constant(texts)).to_list()]


@pytest.mark.parametrize("words", [1, 3, 30])
def test_leading_words_keep_the_first_pieces(tokenizers, lines, words):
    in_graph, full = tokenizers[True]
    assert in_graph.splits_at_whitespace
    rng = random.Random(words)
    long_texts = [" ".join(rng.sample(lines, 6)) for _ in range(20)]
    # Words made only of non-ASCII characters or combining marks do not count towards the cut.
    tricky = [" \u0301\u0301 ΣΑΣ 한국어 ". join(["x"] * 40), "ΌΣΟΣ  \t" * 50 + "a b " * 40,
              "1,000, 2,000, " * 40, "\u00a0".join(["word"] * 80) + " end " * 40]
    texts = UNICODE_CASES + lines[:40] + long_texts + tricky
    cut = in_graph.leading_words(tf.constant(texts), words).numpy()
    assert _first_ids(in_graph, list(cut), words) == _first_ids(in_graph, texts, words)
    assert [python_ids(full, text.decode("utf-8", "ignore"), True)[:words]
            for text in cut] == [python_ids(full, text, True)[:words] for text in texts]
    # Texts with fewer counted words are kept whole; long ones are cut to a few words.
    for text, kept in zip(texts, cut):
        if len(text.split()) <= words:
            assert kept == text.encode("utf-8")
    long_cut = cut[len(UNICODE_CASES) + 40:-len(tricky)]
    assert max(len(kept) for kept in long_cut) < 60 * words + 60


def test_a_megabyte_text_gives_the_ids_of_its_prefix(tokenizers):
    in_graph, full = tokenizers[True]
    prefix = "The jury said 1,000,000, or so; Crème brûlée ΣΑΣ. "
    text = (prefix * (1_000_000 // len(prefix) + 1))[:1_000_000]
    preprocessor = preprocessor_module.TextPreprocessor(in_graph, max_seq_length=32)
    whole = preprocessor.pack(tf.constant([text, "x"]), tf.constant(["", text]))
    short = preprocessor.pack(tf.constant([prefix * 4, "x"]), tf.constant(["", prefix * 4]))
    for name in preprocessor_module.MODEL_INPUTS:
        assert whole[name].numpy().tolist() == short[name].numpy().tolist()
    expected = [2] + python_ids(full, prefix * 4, True)[:30] + [3]
    assert whole["input_ids"].numpy()[0].tolist()[:len(expected)] == expected
    assert len(in_graph.leading_words(tf.constant([text]), 32).numpy()[0]) < 2000
