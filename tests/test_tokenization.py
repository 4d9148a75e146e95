"""albert_tf.text.tokenization against the original tokenization.py rules, the original BERT WordPiece test cases
and Hugging Face's sentencepiece-based `AlbertTokenizer` on real text."""

import re
import unicodedata

import pytest

from albert_tf.text import tokenization
from tests import real_lines

UNDERLINE = "\u2581"


# ---------------------------------------------------------------------------------------------
# A transcription of the original rules, written independently of the module under test.


def spec_preprocess(text, lower):
    """Collapse whitespace runs and strip; NFKD; drop every combining character; lowercase."""
    text = re.sub(r"\s+", " ", text).strip()
    decomposed = unicodedata.normalize("NFKD", text)
    kept = []
    for char in decomposed:
        if unicodedata.combining(char) == 0:
            kept.append(char)
    text = "".join(kept)
    return text.lower() if lower else text


def spec_encode_pieces(sp_model, text, strip_spurious_underline=False):
    """The original digit-comma rule. `strip_spurious_underline=True` is what the original INTENDED (and
    what Hugging Face does): drop a leading "▁" the re-encoding adds to a piece that had none."""
    out = []
    for piece in sp_model.encode(text, out_type=str):
        if len(piece) >= 2 and piece.endswith(",") and piece[-2].isdigit():
            sub = sp_model.encode(piece[:-1].replace(UNDERLINE, ""), out_type=str)
            if strip_spurious_underline and not piece.startswith(UNDERLINE) and sub[0][0] == UNDERLINE:
                sub = sub[1:] if sub[0] == UNDERLINE else [sub[0][1:]] + sub[1:]
            out += sub + [","]
        else:
            out.append(piece)
    return out


@pytest.fixture(scope="module")
def tokenizer(spm_model_file):
    return tokenization.FullTokenizer(None, do_lower_case=True, spm_model_file=spm_model_file)


@pytest.fixture(scope="module")
def lines(real_data):
    return real_lines.load(real_data)


# ---------------------------------------------------------------------------------------------
# preprocess_text


def test_preprocess_text_hand_written_cases():
    pre = tokenization.preprocess_text
    assert pre("héllo  Wörld") == "hello World"
    assert pre("héllo  Wörld", lower=True) == "hello world"
    assert pre("  a\tb\n\nc\r\n ") == "a b c"
    assert pre("a\tb", remove_space=False) == "a\tb"
    # Accents go even without lowercasing (no keep_accents in ALBERT); compatibility forms fold.
    assert pre("Crème Brûlée ﬁ ½") == "Creme Brulee fi 1⁄2"
    # No quote rewriting (Hugging Face rewrites `` and '' to ").
    assert pre("``Conan''") == "``Conan''"
    # Whitespace is collapsed BEFORE NFKD: the space NFKD makes from "¨" stays.
    assert pre("a ¨b") == "a  b"
    assert pre("Ünïcödé".encode("utf-8"), lower=True) == "unicode"


def test_preprocess_text_matches_spec_transcription(lines):
    assert len(lines) >= 10000
    for line in lines:
        for lower in (False, True):
            assert tokenization.preprocess_text(line, lower=lower) == spec_preprocess(line, lower)


# ---------------------------------------------------------------------------------------------
# encode_pieces / digit-comma rule


class _ScriptedSpModel:
    """A stand-in whose segmentations are fixed, so the digit-comma mechanics are checked exactly."""

    def __init__(self, table):
        self.table = table

    def EncodeAsPieces(self, text):
        return list(self.table[text])

    def PieceToId(self, piece):
        return {"▁": 13, "0": 20, ",000": 21, ",": 16, "▁1": 30, "▁5": 31}.get(piece, 1)


def test_digit_comma_rule_keeps_the_spurious_underline():
    sp = _ScriptedSpModel({
        "1,000,000, x": ["▁1", ",000", ",000,", "▁x"],
        ",000": ["▁", ",000"],     # re-encoding a piece without "▁" adds one ...
        "5": ["▁5"],
    })
    # ... and, as in the original under Python 3, it is NOT stripped.
    assert tokenization.encode_pieces(sp, "1,000,000, x") == ["▁1", ",000", "▁", ",000", ",", "▁x"]
    assert tokenization.encode_ids(sp, "1,000,000, x") == [30, 21, 13, 21, 16, 1]
    sp.table["▁5,"] = ["▁5,"]
    sp.table["a ▁5,"] = ["▁a", "▁5,"]
    # A piece that had "▁": its "▁" is removed before re-encoding and comes back from the encoder.
    assert tokenization.encode_pieces(sp, "a ▁5,") == ["▁a", "▁5", ","]


def test_digit_comma_rule_on_real_model(digit_comma_spm_model_file):
    tok = tokenization.FullTokenizer(None, spm_model_file=digit_comma_spm_model_file)
    sp = tok.sp_model
    text = tokenization.preprocess_text("It cost 1,000,000, he said;  about 5,", lower=True)
    raw = sp.encode(text, out_type=str)
    # The model itself splits off "000," (no "▁") and "▁5," style pieces ...
    assert "000," in raw
    pieces = tok.tokenize(text)
    assert pieces == spec_encode_pieces(sp, text)
    # ... which the rule re-encodes: "000," -> "▁" + pieces of "000" + ",", the spurious "▁"
    # kept exactly as the original did under Python 3.
    zeros = sp.encode("000", out_type=str)
    assert zeros[0] == UNDERLINE
    assert pieces[:3] == ["▁it", "▁cost", "▁1"]
    assert pieces[3:4 + 2 * (len(zeros) + 1)] == [","] + (zeros + [","]) * 2
    assert not any(len(p) > 1 and p.endswith(",") and p[-2].isdigit() for p in pieces)
    ids = tok.convert_tokens_to_ids(pieces)
    assert ids == [sp.piece_to_id(p) for p in pieces]
    assert tokenization.encode_ids(sp, text) == ids
    assert tok.convert_ids_to_tokens(ids) == pieces


def test_unknown_pieces_get_the_unk_id(tokenizer):
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "<pad>", "[SEP]", "[MASK]", "<unk>"]) == [2, 0, 3, 4, 1]
    assert tokenizer.convert_tokens_to_ids(["no-such-piece-xyz", "\u4e2d"]) == [1, 1]
    assert tokenizer.vocab["[MASK]"] == 4 and tokenizer.inv_vocab[4] == "[MASK]"
    assert len(tokenizer.vocab) == 4000


def test_tokenize_matches_spec_transcription(tokenizer, lines):
    for line in lines:
        for lower in (False, True):
            text = spec_preprocess(line, lower)
            assert tokenizer.tokenize(text) == spec_encode_pieces(tokenizer.sp_model, text), line


def test_from_scratch_and_sampling(spm_model_file):
    tok = tokenization.FullTokenizer.from_scratch("ignored.vocab", True, spm_model_file)
    text = "the 1,000, jurors said"
    sampled = tokenization.encode_pieces(tok.sp_model, text, sample=True)
    assert "".join(sampled).replace(UNDERLINE, " ").strip() == text.replace(" ", " ")


def test_missing_or_bad_model_files_are_named(tmp_path):
    missing = str(tmp_path / "nope.model")
    with pytest.raises(FileNotFoundError, match="nope.model"):
        tokenization.FullTokenizer(None, spm_model_file=missing)
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"this is not a protobuf")
    with pytest.raises(ValueError, match="bad.model"):
        tokenization.FullTokenizer(None, spm_model_file=str(bad))
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        tokenization.FullTokenizer(str(tmp_path / "vocab.txt"))


# ---------------------------------------------------------------------------------------------
# Agreement with Hugging Face's AlbertTokenizer (slow, sentencepiece-based) on real text.


def _hf_quotes(text):
    return text.replace("``", '"').replace("''", '"')


@pytest.mark.slow
@pytest.mark.parametrize("model_fixture,lower", [("spm_model_file", True),
                                                 ("digit_comma_spm_model_file", False)])
def test_only_documented_differences_from_hugging_face(request, lines, model_fixture, lower):
    from transformers import AlbertTokenizer
    model_file = request.getfixturevalue(model_fixture)
    hf = AlbertTokenizer(vocab_file=model_file, do_lower_case=lower)
    tok = tokenization.FullTokenizer(None, do_lower_case=lower, spm_model_file=model_file)
    sp = tok.sp_model

    def ours(text):
        return tok.tokenize(tokenization.preprocess_text(text, lower=lower))

    def intended(text):
        return spec_encode_pieces(sp, spec_preprocess(text, lower), strip_spurious_underline=True)

    counts = {"same": 0, "quotes": 0, "underline": 0, "both": 0}
    for line in lines:
        theirs = hf.tokenize(line)
        if ours(line) == theirs:
            counts["same"] += 1
        elif ours(_hf_quotes(line)) == theirs:
            counts["quotes"] += 1
        elif intended(line) == theirs:
            counts["underline"] += 1
        elif intended(_hf_quotes(line)) == theirs:
            counts["both"] += 1
        else:
            pytest.fail(f"unexplained difference on {line!r}: ours {ours(line)} vs HF {theirs}")
    assert len(lines) >= 10000
    assert counts["quotes"] + counts["both"] > 0, counts
    if model_fixture == "digit_comma_spm_model_file":  # only this model has pieces like "000,"
        assert counts["underline"] + counts["both"] > 0, counts
    else:
        assert counts["underline"] + counts["both"] == 0, counts
    assert counts["same"] > 0.9 * len(lines), counts
    print(model_fixture, counts)


# ---------------------------------------------------------------------------------------------
# The WordPiece (BERT) path: the original BERT tokenization tests.


def _write_vocab(tmp_path, tokens):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


def test_full_tokenizer_wordpiece(tmp_path):
    vocab_file = _write_vocab(tmp_path, ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed",
                                         "wa", "un", "runn", "##ing", ","])
    tok = tokenization.FullTokenizer(vocab_file)
    tokens = tok.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tok.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tok.convert_ids_to_tokens([7, 4, 5]) == ["un", "##want", "##ed"]
    assert tok.sp_model is None
    with pytest.raises(KeyError, match="nope"):
        tok.convert_tokens_to_ids(["nope"])


def test_load_vocab_takes_the_first_field(tmp_path):
    path = tmp_path / "v.vocab"
    path.write_text("<pad>\t0\n<unk>\t0\n\n▁the\t-3.1\n<unk>\t0\n", encoding="utf-8")
    assert list(tokenization.load_vocab(str(path)).items()) == [
        ("<pad>", 0), ("<unk>", 1), (" ", 2), ("▁the", 3)]


def test_basic_tokenizer():
    basic = tokenization.BasicTokenizer
    assert basic().tokenize("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]
    assert basic(do_lower_case=True).tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "hello", "!", "how", "are", "you", "?"]
    assert basic(do_lower_case=True).tokenize("H\u00E9llo") == ["hello"]
    assert basic(do_lower_case=False).tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo", "!", "how", "Are", "yoU", "?"]
    assert basic().tokenize("a\x00b\ufffdc\u200bd") == ["abcd"]


def test_wordpiece_tokenizer():
    vocab = {t: i for i, t in enumerate(
        ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"])}
    wordpiece = tokenization.WordpieceTokenizer(vocab=vocab)
    assert wordpiece.tokenize("") == []
    assert wordpiece.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert wordpiece.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert wordpiece.tokenize("un" * 101) == ["[UNK]"]  # longer than 200 characters
    assert tokenization.convert_tokens_to_ids(vocab, ["un", "##want", "##ed", "runn", "##ing"]) == [
        7, 4, 5, 8, 9]


def test_character_classes():
    for char in (" ", "\t", "\r", "\n", "\u00A0"):
        assert tokenization._is_whitespace(char)
    for char in ("A", "-"):
        assert not tokenization._is_whitespace(char)
    assert tokenization._is_control("\u0005")
    for char in ("A", " ", "\t", "\r", "\U0001F4A9"):
        assert not tokenization._is_control(char)
    for char in ("-", "$", "`", "."):
        assert tokenization._is_punctuation(char)
    for char in ("A", " "):
        assert not tokenization._is_punctuation(char)


def test_unicode_helpers():
    assert tokenization.convert_to_unicode(b"caf\xc3\xa9\xff") == "café"
    assert tokenization.printable_text("x") == "x"
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(3)
