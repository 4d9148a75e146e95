"""Pretraining data building blocks against hand-computed cases and second implementations."""

import random

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from albert_tf.text import tokenization
from albert_tf.pretraining import documents
from albert_tf.pretraining import instances
from albert_tf.pretraining import masking
from albert_tf.pretraining import options as options_lib
from albert_tf.pretraining import progress
from albert_tf.pretraining import records
from albert_tf.pretraining import text_encoding
from albert_tf.pretraining import vocabulary


class _FixedBits:
    """An rng whose getrandbits returns all ones (every removal from the front) or zeros."""

    def __init__(self, front):
        self.front = front

    def getrandbits(self, k):
        return (1 << k) - 1 if self.front else 0


# -- truncate_seq_pair -------------------------------------------------------------------------

@pytest.mark.parametrize("len_a, len_b, max_tokens, removed_a, removed_b", [
    (5, 2, 4, 3, 0),   # A longer by 3: all three removals from A.
    (3, 3, 4, 1, 1),   # Tie: B first, then A.
    (4, 4, 5, 1, 2),   # Tie: B, A, B.
    (2, 6, 5, 0, 3),   # B longer by 4 but only 3 to remove.
    (6, 3, 5, 3, 1),   # A down to 3 (equal), then B (tie), total 4.
    (3, 2, 5, 0, 0),   # Fits already.
])
def test_truncate_seq_pair_hand_computed(len_a, len_b, max_tokens, removed_a, removed_b):
    for front in (True, False):
        tokens_a, tokens_b = list(range(len_a)), list(range(100, 100 + len_b))
        instances.truncate_seq_pair(tokens_a, tokens_b, max_tokens, _FixedBits(front))
        if front:
            assert tokens_a == list(range(removed_a, len_a))
            assert tokens_b == list(range(100 + removed_b, 100 + len_b))
        else:
            assert tokens_a == list(range(len_a - removed_a))
            assert tokens_b == list(range(100, 100 + len_b - removed_b))


def _original_truncate(tokens_a, tokens_b, max_num_tokens, rng):
    """The original's loop, one token at a time (a transcription of create_instances_from_document)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def test_truncation_has_the_distribution_of_the_one_token_loop():
    """Same lengths always; the front/back split has the same law (chi-square, 20k draws)."""
    rng_fast, rng_loop = random.Random(1), random.Random(2)
    fast_counts, loop_counts = np.zeros(14, int), np.zeros(14, int)
    for _ in range(20000):
        a1, b1 = list(range(9)), list(range(100, 104))
        a2, b2 = list(range(9)), list(range(100, 104))
        instances.truncate_seq_pair(a1, b1, 6, rng_fast)
        _original_truncate(a2, b2, 6, rng_loop)
        assert (len(a1), len(b1)) == (len(a2), len(b2)) == (3, 3)
        fast_counts[a1[0] + 7 * (b1[0] - 100)] += 1
        loop_counts[a2[0] + 7 * (b2[0] - 100)] += 1
    keep = (fast_counts + loop_counts) > 0
    _, p_value, _, _ = stats.chi2_contingency(np.stack([fast_counts[keep], loop_counts[keep]]))
    assert p_value > 1e-3


# -- budget rule -------------------------------------------------------------------------------

@pytest.mark.parametrize("num_tokens, max_predictions, expected", [
    (3, 20, 1),     # round(0.45) = 0, raised to 1
    (5, 20, 1),     # round(0.75) = 1
    (10, 20, 2),    # round(1.5) = 2 (half to even)
    (30, 20, 4),    # round(4.5) = 4 (half to even)
    (50, 20, 8),    # round(7.5) = 8
    (70, 20, 10),   # round(10.5) = 10
    (128, 20, 19),  # round(19.2) = 19
    (512, 20, 20),  # round(76.8) = 77, capped at max_predictions_per_seq
])
def test_masking_budget_hand_computed(num_tokens, max_predictions, expected):
    assert masking.masking_budget(num_tokens, 0.15, max_predictions) == expected


def test_ngram_probabilities():
    assert masking.ngram_cumulative_probabilities(3, True) == pytest.approx([6 / 11, 9 / 11])
    assert masking.ngram_cumulative_probabilities(3, False) == pytest.approx([2 / 11, 5 / 11])
    assert masking.ngram_cumulative_probabilities(1, True) == []


# -- start-piece rules -------------------------------------------------------------------------

@pytest.mark.parametrize("piece, expected", [
    ("\u2581the", True), ("ing", False), (",", True), ("'s", True), ("<unk>", True),
    ("3", True), ("a3", True), ("ab-", False), ("\u00e9", True), ("''", True), ("[[", False),
    ("=", True), ("Ab", False),
])
def test_sentencepiece_start_piece_rule(piece, expected):
    # "'" and "=" are outside the original's punctuation set, so they count as non-English.
    assert vocabulary.is_start_piece_sp(piece) is expected


def test_wordpiece_start_piece_rule():
    assert vocabulary.is_start_piece_bert("ing")
    assert not vocabulary.is_start_piece_bert("##ing")


# -- reading documents -------------------------------------------------------------------------

@pytest.mark.parametrize("raw, text, replaced", [
    (b"plain", "plain", 0),
    (b"caf\xc3\xa9", "caf\u00e9", 0),
    (b"a\xffb", "a\ufffdb", 1),
    (b"a\xe2\x96b", "a\ufffdb", 2),      # truncated 3-byte sequence: one U+FFFD, 2 bytes
    (b"\xff\xfe\xfd", "\ufffd\ufffd\ufffd", 3),
    (b"end\xe2\x96", "end\ufffd", 2),
])
def test_decode_utf8_replaces_and_counts(raw, text, replaced):
    assert documents.decode_utf8(raw) == (text, replaced)
    assert text == raw.decode("utf-8", "replace")


class _SplitEncoder:
    """Whitespace 'tokenizer' for document-structure tests: one id per character code."""

    def encode(self, lines):
        return [None if not line.strip() else [ord(c) for c in line.split()[0][:1]]
                for line in lines]


def test_documents_split_like_text_mode(tmp_path):
    path = tmp_path / "in.txt"
    # \r\n, lone \r, \r\r\n (a line then an empty line) and blank lines between documents.
    path.write_bytes(b"a1\r\nb1\rc1\r\r\nd2\n\n\n e3 \nf3")
    docs, read_stats = documents.read_documents(str(path), _SplitEncoder(), "H")
    assert [[d.sentence(i).tolist() for i in range(d.num_sentences)] for d in docs] == [
        [[ord("a")], [ord("b")], [ord("c")]], [[ord("d")]], [[ord("e")], [ord("f")]]]
    with open(path, encoding="utf-8") as handle:  # Python's text mode, like the original.
        assert read_stats.lines == len(handle.read().splitlines())


def test_empty_and_textless_input_files_are_named(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt: input file is empty"):
        documents.check_not_empty(str(empty))
    blank = tmp_path / "blank.txt"
    blank.write_bytes(b"\n  \n\n")
    with pytest.raises(ValueError, match="blank.txt: input file contains no text"):
        documents.read_documents(str(blank), _SplitEncoder(), "H")


# -- line encoding -----------------------------------------------------------------------------

def _reference_ids(tokenizer, line, lower=True):
    text = tokenization.preprocess_text(line, lower=lower)
    if not text:
        return None
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


def test_batch_line_encoding_equals_the_original_tokenizer(real_data, spm_model_file):
    vocab = vocabulary.Vocabulary.from_files(None, spm_model_file, True)
    encoder = text_encoding.LineEncoder(vocab, do_lower_case=True)
    with open(real_data["brown"][0], encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    lines += ["Caf\u00e9 na\u00efve \u00c5ngstr\u00f6m", "  spaced \t out  ", "\u00a8", "1,000, 3,5",
              "x" * 300]
    encoded = encoder.encode(lines)
    assert encoded == [_reference_ids(vocab.tokenizer, line) for line in lines]
    assert len(lines) > 5000


def test_digit_comma_lines_take_the_original_path(digit_comma_spm_model_file):
    vocab = vocabulary.Vocabulary.from_files(None, digit_comma_spm_model_file, True)
    encoder = text_encoding.LineEncoder(vocab, do_lower_case=False)
    lines = ["It cost 3,000, then 1,000,000, and 12,5 more.", "000, and 7,"]
    assert encoder.encode(lines) == [_reference_ids(vocab.tokenizer, l, lower=False) for l in lines]
    # The spurious "▁" of the original digit-comma rule is there (the original's encode_pieces under Python 3).
    sp = vocab.tokenizer.sp_model
    assert sp.PieceToId("\u2581") in encoder.encode(["000,"])[0]


def test_unknown_text_inside_a_word_is_not_a_word_start(spm_model_file):
    vocab = vocabulary.Vocabulary.from_files(None, spm_model_file, True)
    encoder = text_encoding.LineEncoder(vocab, do_lower_case=True)
    pieces = vocab.tokenizer.tokenize("ab[[cd [x")
    assert "[[" in pieces and "[" in pieces  # both unknown to the Brown vocabulary
    ids = encoder.encode(["ab[[cd [x"])[0]
    unk = vocab.unk_id
    expected = [vocab.unknown_continuation_id if p == "[[" else vocab.tokenizer.sp_model.PieceToId(p)
                for p in pieces]
    assert ids == expected and unk in ids  # "[" alone is punctuation: a start, plain unk
    assert vocab.start_flags[vocab.unknown_continuation_id] == 0
    assert vocab.start_flags[unk] == 1


# -- masking -----------------------------------------------------------------------------------

class _Vocab:
    """A 20-id vocabulary: even ids start words, odd ids continue them; 2/3/4 = CLS/SEP/MASK."""

    def __init__(self):
        self.size = 20
        self.cls_id, self.sep_id, self.mask_id, self.unk_id = 2, 3, 4, 1
        self.unknown_continuation_id = 20
        self.replacement_ids = list(range(20))
        self.start_flags = bytes([1 if i % 2 == 0 else 0 for i in range(20)] + [0])


def test_whole_words_can_span_the_first_sep_like_the_original():
    vocab = _Vocab()
    # [CLS] 11 10 13 [SEP] 15 12 [SEP]: 11 starts a candidate (the first piece always does),
    # 10 starts one and 13 joins it; 15 (first of B, not a start) joins A's last word across
    # [SEP]; 12 starts the last one. Candidates by position: {1}, {2, 3, 5}, {6}.
    tokens = [2, 11, 10, 13, 3, 15, 12, 3]
    masker = masking.Masker(vocab, masked_lm_prob=1.0, max_predictions_per_seq=20, ngram=1)
    out = masker.mask(tokens, 4, random.Random(0))
    assert out.token_boundary.tolist() == [1, 0, 1, 0, 1, 0, 1, 1]
    assert out.positions == [1, 2, 3, 5, 6]  # budget round(8 * 1.0) = 8 covers all 5 pieces
    assert out.labels == [11, 10, 13, 15, 12]
    assert masker.stats.masked_ngrams[1] == 3


def test_budget_is_never_exceeded_and_words_stay_whole():
    vocab = _Vocab()
    rng = random.Random(3)
    masker = masking.Masker(vocab, 0.3, max_predictions_per_seq=5, ngram=3)
    for _ in range(300):
        len_a, len_b = rng.randint(1, 20), rng.randint(1, 20)
        tokens = ([2] + [rng.randrange(5, 20) for _ in range(len_a)] + [3]
                  + [rng.randrange(5, 20) for _ in range(len_b)] + [3])
        out = masker.mask(tokens, len_a + 1, rng)
        budget = masking.masking_budget(len(tokens), 0.3, 5)
        assert len(out.positions) <= budget
        assert out.positions == sorted(set(out.positions))
        assert all(tokens[p] == label for p, label in zip(out.positions, out.labels))
        masked = set(out.positions)
        # Every word (original rule) is all in or all out.
        words, current = [], None
        for i, token in enumerate(tokens):
            if i in (0, len_a + 1, len(tokens) - 1):
                continue
            if current is None or vocab.start_flags[token]:
                current = [i]
                words.append(current)
            else:
                current.append(i)
        for word in words:
            assert len(masked.intersection(word)) in (0, len(word))


def test_permutation_predicts_permuted_positions_too():
    vocab = _Vocab()
    tokens = [2] + list(range(5, 19)) + [3] + list(range(5, 19)) + [3]
    plain = masking.Masker(vocab, 0.2, max_predictions_per_seq=6, ngram=1,
                           do_whole_word_mask=False).mask(tokens, 15, random.Random(5))
    permuting = masking.Masker(vocab, 0.2, max_predictions_per_seq=6, ngram=1,
                               do_whole_word_mask=False, do_permutation=True)
    out = permuting.mask(tokens, 15, random.Random(5))  # Same seed: same first pass.
    extra = sorted(set(out.positions) - set(plain.positions))
    budget = masking.masking_budget(len(tokens), 0.2, 6)
    assert set(plain.positions) < set(out.positions)
    assert len(extra) == budget == permuting.stats.permuted
    assert sorted(out.tokens[p] for p in extra) == sorted(tokens[p] for p in extra)
    assert [out.tokens[p] for p in extra] != [tokens[p] for p in extra]  # 6! - 1 to 1 odds
    assert all(label == tokens[p] for p, label in zip(out.positions, out.labels))


def test_reversed_ngram_distribution():
    vocab = _Vocab()
    masker = masking.Masker(vocab, 0.5, max_predictions_per_seq=40, ngram=3,
                            favor_shorter_ngram=False)
    rng = random.Random(7)
    for _ in range(500):
        tokens = [2] + [rng.randrange(5, 20) for _ in range(30)] + [3] + [
            rng.randrange(5, 20) for _ in range(30)] + [3]
        masker.mask(tokens, 31, rng)
    observed = masker.stats.sampled_ngrams[1:]
    expected = np.array([2, 3, 6]) / 11 * sum(observed)
    assert sum(observed) > 5000
    assert stats.chisquare(observed, expected).pvalue > 1e-3


# -- serialization -----------------------------------------------------------------------------

def _tf_example(masked, len_a, label, max_seq_length, masked_lm_length, unk_fix):
    pad = max_seq_length - len(masked.tokens)
    ppad = masked_lm_length - len(masked.positions)
    ex = tf.train.Example()
    f = ex.features.feature
    f["input_ids"].int64_list.value.extend([unk_fix(t) for t in masked.tokens.tolist()] + [0] * pad)
    f["input_mask"].int64_list.value.extend([1] * len(masked.tokens) + [0] * pad)
    f["segment_ids"].int64_list.value.extend(
        [0] * (len_a + 2) + [1] * (len(masked.tokens) - len_a - 2) + [0] * pad)
    f["token_boundary"].int64_list.value.extend(masked.token_boundary.tolist() + [0] * pad)
    f["masked_lm_positions"].int64_list.value.extend(masked.positions + [0] * ppad)
    f["masked_lm_ids"].int64_list.value.extend([unk_fix(t) for t in masked.labels] + [0] * ppad)
    f["masked_lm_weights"].float_list.value.extend([1.0] * len(masked.positions) + [0.0] * ppad)
    f["next_sentence_labels"].int64_list.value.append(label)
    return ex.SerializeToString(deterministic=True)


@pytest.mark.parametrize("vocab_size", [20, 300, 40000])
def test_example_bytes_equal_tensorflow_deterministic_serialization(vocab_size):
    vocab = _Vocab()
    vocab.size = vocab_size
    vocab.unknown_continuation_id = vocab_size
    rng = random.Random(vocab_size)
    encoder = records.ExampleEncoder(64, 10, vocab)
    for _ in range(50):
        len_a, len_b = rng.randint(1, 30), rng.randint(1, 29)
        tokens = [2] + [rng.randrange(vocab_size + 1) for _ in range(len_a + len_b + 1)] + [3]
        positions = sorted(rng.sample(range(1, len(tokens) - 1),
                                     min(rng.randint(0, 10), len(tokens) - 2)))
        masked = masking.MaskedSequence(
            np.array(tokens, np.int32), positions, [tokens[p] for p in positions],
            np.array([rng.randint(0, 1) for _ in tokens], np.uint8))
        label = rng.randint(0, 1)
        ours = encoder.encode(masked, len_a, label)
        theirs = _tf_example(masked, len_a, label, 64, 10,
                             lambda t: vocab.unk_id if t == vocab_size else t)
        assert ours == theirs
        parsed = tf.train.Example.FromString(ours).features.feature
        assert len(parsed["masked_lm_weights"].float_list.value) == 10


def test_no_predictions_at_all_serialize_like_tensorflow():
    """masked_lm_prob=0 with max_predictions_per_seq=0: empty masked_lm_* lists."""
    vocab = _Vocab()
    masked = masking.Masker(vocab, 0.0, 0).mask([2, 6, 7, 3, 8, 3], 3, random.Random(0))
    assert masked.positions == []
    ours = records.ExampleEncoder(8, 0, vocab).encode(masked, 2, 1)
    assert ours == _tf_example(masked, 2, 1, 8, 0, lambda t: t)


def test_over_long_sequences_are_refused():
    vocab = _Vocab()
    encoder = records.ExampleEncoder(8, 2, vocab)
    masked = masking.MaskedSequence(np.array([2] + [5] * 8 + [3], np.int32), [], [],
                                    np.ones(10, np.uint8))
    with pytest.raises(ValueError, match="exceeds max_seq_length 8"):
        encoder.encode(masked, 4, 0)


# -- options -----------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, message", [
    ({"spm_model_file": None}, "--vocab_file is required when --spm_model_file is not given"),
    ({"max_predictions_per_seq": 0},
     r"--max_predictions_per_seq=0 is too small for the masking budget: with "
     r"--masked_lm_prob=0.15 every sequence gets max\(1, round\(length x masked_lm_prob\)\) >= 1"),
    ({"max_seq_length": 4}, "--max_seq_length=4 is too small"),
    ({"masked_lm_prob": 1.5}, r"--masked_lm_prob=1.5: expected a probability in \[0, 1\]"),
    ({"dupe_factor": 0}, "--dupe_factor=0: expected at least 1"),
    ({"input_file_mode": "w"}, "--input_file_mode='w'"),
])
def test_bad_options_are_named(overrides, message):
    settings = {"spm_model_file": "m.model", **overrides}
    with pytest.raises(ValueError, match=message):
        options_lib.DataOptions(**settings).validate()


def test_budget_cap_note_names_the_numbers():
    note = options_lib.DataOptions(spm_model_file="m").budget_cap_note()
    assert "round(512 x 0.15) = 77" in note and "--max_predictions_per_seq=20" in note
    assert options_lib.DataOptions(spm_model_file="m", max_seq_length=128).budget_cap_note() is None


def test_progress_line_weighs_files_by_size():
    now = [0.0]
    tracker = progress.Progress([100, 300], interval_seconds=60, clock=lambda: now[0])
    now[0] = 2.0
    tracker.chunk(0, 10, 0.5, 5)  # half of the 100-byte file: 50 of 400 bytes done
    assert tracker.line() == ("files 0/2, documents 5, instances 10, 5 instances/s, "
                              "12.5% done, ETA 0:00:14")
    tracker.file_done(0)
    assert tracker.done_fraction() == 0.25


def test_carriage_returns_differ_from_tf_gfile_readline_only_when_bare(tmp_path):
    """The original read corpora with tf.gfile readline; TensorFlow itself is the reference.
    "\r\n" reads the same; a bare "\r" ends a line here and was deleted there (documented)."""
    def tf_lines(path):
        lines = []
        with tf.io.gfile.GFile(str(path), "r") as reader:
            while True:
                line = reader.readline()
                if not line:
                    return lines
                lines.append(line.rstrip("\n"))

    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"one\r\ntwo\r\n\r\nthree")
    assert list(documents._text_lines(str(crlf), documents.ReadStats())) == tf_lines(crlf)
    bare = tmp_path / "bare.txt"
    bare.write_bytes(b"one\rtwo\n")
    assert tf_lines(bare) == ["onetwo"]
    assert list(documents._text_lines(str(bare), documents.ReadStats())) == ["one", "two"]
