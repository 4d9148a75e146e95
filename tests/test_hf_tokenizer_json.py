"""tokenizer.json (`albert_tf.text.hf_tokenizer`, written by export_to_hf.py) against the original
tokenization, `FullTokenizer.tokenize(preprocess_text(text, lower))` with the original's
[CLS]/[SEP] layout and pair truncation (`glue.features.truncate_seq_pair`), on real text:
Brown, *Botchan* and the movie reviews (tests/real_lines.py). Checked with the `tokenizers`
library directly and through transformers' `AutoTokenizer` in a Python where neither
sentencepiece nor protobuf can be imported (the Makefile runs this file under transformers 4
and 5). The vocabularies are the project's own Brown models, which have ALBERT's user-defined
symbols (`-`, `(`, `"`, `.`...): Hugging Face's own converted tokenizer disagrees with the
original on about a quarter of these lines."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from sentencepiece import sentencepiece_model_pb2
from tokenizers import Tokenizer

from albert_tf import checkpoints
from albert_tf.huggingface import hf_format, hf_import
from albert_tf.huggingface.exact import digit_comma, unigram_search
from albert_tf.text import hf_tokenizer, tokenization, vocab
from albert_tf.config import AlbertConfig
from albert_tf.glue import features
from albert_tf.modeling import encoder, pretraining
from tests import real_lines
from tests.conftest import REPO_ROOT, script_env

pytestmark = pytest.mark.slow
MAX_LENGTHS = (24, 25, 64)  # odd and even: the pair budget max_length - 3 is odd for 24 and 64
PAIRS = 1500
# Hand-written cases for what real English text rarely has: Python's whitespace set, spaces that
# NFKD makes, accents and other combining marks, compatibility characters, case rules, text that
# looks like a control piece after lower-casing, unknown characters, the digit-comma rule.
EDGE_CASES = [
    "", "   ", "\t\n", "a ¨ b", "¨abc", "abc ¨", "Ünïcödé façade", "ΟΔΟΣ ΟΔΟΣ.", "aΣ b", "Α'Σ ΑΣ'Α Σ",
    "x\u00a0y\u2003z\x1c w\u2028v", "zero\u200bwidth", "ﬁne ½ ²,", "１２３,４５６", "a▁b", "▁",
    "a ▁", "▁a", "e-mail (yes) \"q\" -- ... –£€5", "10,000, 3,5,", "0000,", "000,000,", "9,",
    " 9, ", "1,000,000,000, x", "a☃☃b ☃", "İstanbul", "ǅ Ǆ", "Straße", "<PAD> [cls] <UNK>",
    "x\u0345y \u0345", "a\u0301", "\ufeffbom", "tab\there", "ｆｕｌｌ", "٣, ٣٣,", "²,", "e.g. U.S.",
    "16,000 people in 1886, then", "x\u0346y 6\u0346,", "16,16,", "▁16,", "1886,16,000,5,",
]
# Learned (not user-defined) pieces ending in a digit and a comma, as in the released
# 30k-clean.model and in vocabularies build_vocab.py trains on text with many numbers: the
# original rewrites them only where SentencePiece's search chooses them.
LEARNED_DIGIT_COMMA = {"6,": -9.0, "16,": -9.5, "▁16,": -10.0, "000,": -8.0, "0,": -9.0,
                       "▁1,": -9.5, "5,": -10.5}


@pytest.fixture(scope="module")
def learned_spm_model_file(spm_model_file, tmp_path_factory):
    """The Brown model with LEARNED_DIGIT_COMMA added as normal pieces."""
    def add_pieces(proto):
        for piece, score in LEARNED_DIGIT_COMMA.items():
            proto.pieces.add(piece=piece, score=score, type=1)
    return _mutated(spm_model_file, tmp_path_factory.mktemp("learned"), add_pieces)


def original_ids(full_tokenizer, text, lower):
    pieces = full_tokenizer.tokenize(tokenization.preprocess_text(text, lower=lower))
    return full_tokenizer.convert_tokens_to_ids(pieces)


def original_pair(a, b, max_length):
    """The original classifier's layout of two id lists: (input ids, segment ids)."""
    a, b = list(a), list(b)
    features.truncate_seq_pair(a, b, max_length - 3)
    return [2] + a + [3] + b + [3], [0] * (len(a) + 2) + [1] * (len(b) + 1)


def transformers_pair(a, b, max_length):
    """transformers' `longest_first` truncation, which is the original's except that when both
    segments must be cut to an odd budget, it gives the extra token to the longer segment (the
    second on a tie) and the original to the first. docs/tokenization.md states this."""
    budget = max_length - 3
    if len(a) + len(b) > budget and min(len(a), len(b)) > budget // 2 and len(b) >= len(a):
        a, b = a[:budget // 2], b[:budget - budget // 2]
        return [2] + a + [3] + b + [3], [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return original_pair(a, b, max_length)


@pytest.fixture(scope="module")
def lines(real_data):
    return real_lines.load(real_data)


@pytest.fixture(scope="module", params=["brown", "brown_cased", "digit_comma"])
def case(request, tmp_path_factory, lines):
    """(tokenizer.json path, the original's ids of every line of `lines`)."""
    model_file = request.getfixturevalue(
        "digit_comma_spm_model_file" if request.param == "digit_comma" else "spm_model_file")
    lower = request.param != "brown_cased"
    path = str(tmp_path_factory.mktemp("tokenizer_json") / "tokenizer.json")
    hf_tokenizer.write(model_file, path, lower)
    full = tokenization.FullTokenizer(None, lower, model_file)
    return path, [original_ids(full, text, lower) for text in lines + EDGE_CASES]


def test_the_vocabularies_can_show_the_difference(spm_model_file, digit_comma_spm_model_file,
                                                  lines):
    """The models have ALBERT's user-defined symbols, the lines use them glued to words (where
    HF's converted tokenizer adds its "▁"), and the digit-comma rule fires on some lines."""
    for model_file in (spm_model_file, digit_comma_spm_model_file):
        proto = hf_tokenizer.read_model_proto(model_file)
        user_defined = [piece.piece for piece in proto.pieces if piece.type == 4]
        assert user_defined[:8] == vocab.ALBERT_SPM_DEFAULTS["user_defined_symbols"]
    glued = [line for line in lines if re.search(r"[-(\".][a-zA-Z0-9]", line)]
    assert len(glued) > 2000
    full = tokenization.FullTokenizer(None, True, digit_comma_spm_model_file)
    fired = [line for line in lines if "000," in full.sp_model.EncodeAsPieces(
        tokenization.preprocess_text(line, lower=True))]
    assert len(fired) > 20


def test_real_text_and_edge_cases_match_the_original(case, lines):
    path, ids = case
    tokenizer = Tokenizer.from_file(path)
    texts = lines + EDGE_CASES
    wrong = [text for text, encoding, expected in zip(texts, tokenizer.encode_batch(texts), ids)
             if encoding.ids != [2] + expected + [3] or encoding.type_ids != [0] * (len(expected) + 2)]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:3]}"


def test_offsets_point_at_the_text(case, lines):
    """transformers' offset mapping (question answering needs it): on the ASCII lines, each
    token's span is its text, up to case and the space its "▁" stands for; a lone "▁" (the
    dummy prefix, or before a user-defined symbol) is left out, having no text of its own."""
    tokenizer = Tokenizer.from_file(case[0])
    ascii_lines = [line for line in lines if line.isascii()]
    wrong = []
    for line, encoding in zip(ascii_lines, tokenizer.encode_batch(ascii_lines)):
        for token, token_id, (start, end) in zip(encoding.tokens, encoding.ids, encoding.offsets):
            if token_id not in (1, 2, 3) and token != "▁":
                span = line[start:end].lstrip()
                if span.lower() != token.lstrip("▁").lower():
                    wrong.append((line, token, line[start:end]))
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("lower", [True, False])
def test_normalization_is_preprocess_text_then_sentencepieces(spm_model_file, lines, lower,
                                                             tmp_path):
    """The text the Unigram model sees, on every line: vocabulary coverage cannot hide a
    difference here (Greek letters are all <unk> to a Brown vocabulary, for one)."""
    path = str(tmp_path / "tokenizer.json")
    hf_tokenizer.write(spm_model_file, path, lower)
    normalizer = Tokenizer.from_file(path).normalizer
    sp_model = tokenization.load_sp_model(spm_model_file)
    wrong = [text for text in lines + EDGE_CASES
             if normalizer.normalize_str(text).replace(hf_tokenizer.CUT, "")
             != sp_model.Normalize(tokenization.preprocess_text(text, lower=lower))]
    assert not wrong, wrong[:3]


def test_pairs_and_truncation_match_the_original(case, lines):
    path, ids = case
    tokenizer = Tokenizer.from_file(path)
    pairs = list(zip(lines[:PAIRS], lines[1:PAIRS + 1]))
    odd_split = 0
    for max_length in MAX_LENGTHS:
        tokenizer.enable_truncation(max_length, strategy="longest_first")
        for index, encoding in enumerate(tokenizer.encode_batch(pairs)):
            expected = transformers_pair(ids[index], ids[index + 1], max_length)
            odd_split += expected != original_pair(ids[index], ids[index + 1], max_length)
            assert (encoding.ids, encoding.type_ids) == expected, pairs[index]
        for index, encoding in enumerate(tokenizer.encode_batch(lines[:PAIRS])):
            assert encoding.ids == [2] + ids[index][:max_length - 2] + [3]
    assert odd_split > 0  # the documented difference is exercised


_AUTO_TOKENIZER = """
import importlib.util, json, sys
for name in ("sentencepiece", "google.protobuf"):
    sys.modules[name] = None  # neither can be imported, nor found by importlib.util.find_spec
import transformers
assert importlib.util.find_spec("sentencepiece") is None
args = json.load(open(sys.argv[1], encoding="utf-8"))
tokenizer = transformers.AutoTokenizer.from_pretrained(args["folder"],
                                                       trust_remote_code=args["trust"])
result = {"version": transformers.__version__, "class": type(tokenizer).__name__,
          "single": tokenizer(args["lines"])["input_ids"], "pairs": {}}
for max_length in args["max_lengths"]:
    encoded = tokenizer(args["lines"][:-1], args["lines"][1:], truncation=True,
                        max_length=max_length)
    result["pairs"][str(max_length)] = [encoded["input_ids"], encoded["token_type_ids"],
                                        encoded["attention_mask"]]
result["special"] = tokenizer.convert_tokens_to_ids(
    [tokenizer.cls_token, tokenizer.sep_token, tokenizer.pad_token, tokenizer.mask_token])
if args["trust"]:  # saved and loaded again, it is still the exact tokenizer
    tokenizer.save_pretrained(args["folder"] + "_saved")
    again = transformers.AutoTokenizer.from_pretrained(args["folder"] + "_saved",
                                                       trust_remote_code=True)
    result["saved"] = [type(again).__name__, again(args["lines"])["input_ids"]]
json.dump(result, open(sys.argv[2], "w", encoding="utf-8"))
"""


def _auto_tokenizer(model_file, lines, trust, tmp_path):
    """What `_AUTO_TOKENIZER` reports on an exported folder without spiece.model."""
    folder = tmp_path / "hf"
    folder.mkdir()
    hf_format.write_tokenizer_files(model_file, True, 512, str(folder))
    os.remove(folder / "spiece.model")  # what transformers needs is tokenizer.json alone
    with open(tmp_path / "args.json", "w", encoding="utf-8") as writer:
        json.dump({"folder": str(folder), "lines": lines, "max_lengths": MAX_LENGTHS,
                   "trust": trust}, writer)
    env = dict(script_env(), HF_MODULES_CACHE=str(tmp_path / "modules"))
    run = subprocess.run([sys.executable, "-c", _AUTO_TOKENIZER, str(tmp_path / "args.json"),
                          str(tmp_path / "out.json")], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    with open(tmp_path / "out.json", encoding="utf-8") as reader:
        return json.load(reader)


def test_auto_tokenizer_without_sentencepiece_or_protobuf(spm_model_file, lines, tmp_path):
    result = _auto_tokenizer(spm_model_file, lines[:PAIRS + 1], False, tmp_path)
    assert result["class"] in ("PreTrainedTokenizerFast", "TokenizersBackend")  # 4, 5
    full = tokenization.FullTokenizer(None, True, spm_model_file)
    ids = [original_ids(full, text, True) for text in lines[:PAIRS + 1]]
    assert result["single"] == [[2] + one + [3] for one in ids], result["version"]
    assert result["special"] == [2, 3, 0, 4]
    for max_length in MAX_LENGTHS:
        input_ids, type_ids, mask = result["pairs"][str(max_length)]
        for index in range(PAIRS):
            expected = transformers_pair(ids[index], ids[index + 1], max_length)
            assert (input_ids[index], type_ids[index]) == expected, (result["version"], index)
            assert mask[index] == [1] * len(expected[0])


def test_special_token_strings_in_text_are_special_tokens(spm_model_file, tmp_path):
    """The one documented difference on single texts: the exact strings of the special tokens
    are those tokens, as in every Hugging Face tokenizer (the original had no such strings in its
    lower-cased text); lower-cased look-alikes are text, as in the original."""
    path = str(tmp_path / "tokenizer.json")
    hf_tokenizer.write(spm_model_file, path, True)
    tokenizer = Tokenizer.from_file(path)
    assert tokenizer.encode("the [MASK] of <unk>", add_special_tokens=False).ids == [
        tokenizer.token_to_id("▁the"), 4, tokenizer.token_to_id("▁of"), 1]
    full = tokenization.FullTokenizer(None, True, spm_model_file)
    assert tokenizer.encode("[MASK] <PAD>", add_special_tokens=False).ids[1:] == original_ids(
        full, "<PAD>", True)


def _mutated(model_file, tmp_path, change):
    proto = sentencepiece_model_pb2.ModelProto()
    with open(model_file, "rb") as reader:
        proto.ParseFromString(reader.read())
    change(proto)
    path = str(tmp_path / "changed.model")
    with open(path, "wb") as writer:
        writer.write(proto.SerializeToString())
    return path


def test_what_it_cannot_reproduce_is_refused(spm_model_file, tmp_path):
    def bpe(proto):
        proto.trainer_spec.model_type = sentencepiece_model_pb2.TrainerSpec.BPE

    def no_prefix(proto):
        proto.normalizer_spec.add_dummy_prefix = False

    for change, message in ((bpe, "model_type is not unigram"),
                            (no_prefix, "add_dummy_prefix")):
        with pytest.raises(hf_tokenizer.TokenizerExportError, match=message):
            hf_tokenizer.build(_mutated(spm_model_file, tmp_path, change))
    (tmp_path / "not.model").write_bytes(b"\x00not a model")
    with pytest.raises(hf_tokenizer.TokenizerExportError, match="not.model: not a valid"):
        hf_tokenizer.build(str(tmp_path / "not.model"))


def test_import_from_a_folder_with_one_tokenizer_file(spm_model_file, tmp_path):
    """transformers 5 saves tokenizer.json only; older folders have spiece.model only."""
    config = AlbertConfig(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=4, intermediate_size=37, max_position_embeddings=40)
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    model({"input_ids": np.zeros([1, 4], np.int32), "input_mask": np.ones([1, 4], np.int32),
           "segment_ids": np.zeros([1, 4], np.int32),
           "masked_lm_positions": np.zeros([1, 1], np.int32)})
    prefix = checkpoints.write_checkpoint(str(tmp_path / "ckpt" / "model.ckpt-1"),
                                          model.checkpoint_variables())
    for kept in ("tokenizer.json", "spiece.model"):
        folder = str(tmp_path / f"hf_{kept}")
        hf_format.export_folder(config, prefix, folder, spm_model_file=spm_model_file)
        for name in hf_format.TOKENIZER_FILES:
            if name != kept:
                os.remove(os.path.join(folder, name))
        output = str(tmp_path / f"back_{kept}")
        imported, _ = hf_import.import_folder(folder, output)
        assert sorted(name for name in os.listdir(output) if name in hf_format.TOKENIZER_FILES
                      ) == [kept]
        reader = checkpoints.list_variables(imported)
        assert "bert/embeddings/word_embeddings" in reader


def test_learned_digit_comma_pieces_are_exact_through_the_exact_path(learned_spm_model_file,
                                                                    lines, tmp_path):
    """tokenizer.json can only rewrite a learned digit-comma piece wherever it occurs (so it
    differs on some numbers); `digit_comma.exact_tokenizer`, what trust_remote_code=True loads,
    agrees with the original on every line, pairs included; the export counts both."""
    folder = str(tmp_path)
    hf_format.write_tokenizer_files(learned_spm_model_file, True, 512, folder)
    proto = hf_tokenizer.read_model_proto(learned_spm_model_file)
    assert sorted(hf_tokenizer.learned_digit_comma_pieces(proto)) == sorted(LEARNED_DIGIT_COMMA)
    with open(tmp_path / "tokenizer_config.json", encoding="utf-8") as reader:
        settings = json.load(reader)
    assert settings["control_pieces"] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert settings["user_defined_pieces"] == vocab.ALBERT_SPM_DEFAULTS["user_defined_symbols"]
    fast = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    exact = digit_comma.exact_tokenizer(fast, unigram_search.UnigramSearch.of(
        fast, settings["user_defined_pieces"], settings["control_pieces"]))
    full = tokenization.FullTokenizer(None, True, learned_spm_model_file)
    texts = lines + EDGE_CASES
    ids = [original_ids(full, text, True) for text in texts]
    wrong_fast = [text for text, encoding, one in zip(texts, fast.encode_batch(texts), ids)
                  if encoding.ids != [2] + one + [3]]
    wrong_exact = [text for text, encoding, one in zip(texts, exact.encode_batch(texts), ids)
                   if encoding.ids != [2] + one + [3]]
    assert "16,000 people in 1886, then" in wrong_fast and len(wrong_fast) > 100
    assert not wrong_exact, f"{len(wrong_exact)} of {len(texts)} differ, e.g. {wrong_exact[:3]}"
    pairs = list(zip(lines[:PAIRS], lines[1:PAIRS + 1]))
    exact.enable_truncation(64, strategy="longest_first")
    for index, encoding in enumerate(exact.encode_batch(pairs)):
        assert (encoding.ids, encoding.type_ids) == transformers_pair(ids[index], ids[index + 1],
                                                                      64), pairs[index]
    encoding = exact.encode("16,000 people in 1886,", add_special_tokens=False)
    assert encoding.tokens == ["▁16", ",000", "▁people", "▁in", "▁18", "8", "▁6", ","]
    assert encoding.offsets[-2:] == [(20, 21), (21, 22)]  # the added "▁" stands for no text
    sample = [line for line in lines if re.search(r"\d,", line)]
    assert hf_format.tokenizer_differences(folder, learned_spm_model_file, True, sample) == (
        sum(text in wrong_fast for text in sample), 0)


def test_exact_path_refuses_a_file_with_another_model(spm_model_file, tmp_path):
    # the marks by which it removes the file's digit-comma and control-piece steps
    assert (digit_comma.CUT, digit_comma.LEARNED_CUT) == (hf_tokenizer.CUT,
                                                          hf_tokenizer.LEARNED_CUT)
    path = str(tmp_path / "tokenizer.json")
    hf_tokenizer.write(spm_model_file, path, True)
    state = json.loads(Tokenizer.from_file(path).to_str())
    state["model"] = {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}
    with pytest.raises(ValueError, match="has a WordLevel model, not the Unigram model"):
        unigram_search.UnigramSearch.of(Tokenizer.from_str(json.dumps(state)), [], ["<unk>"])


def test_auto_tokenizer_with_trust_remote_code_is_exact_on_numbers(learned_spm_model_file, lines,
                                                                   tmp_path):
    """The documented exact path, through transformers 4 and 5 without sentencepiece: every
    held-out line with a digit before a comma, alone and in pairs, and after save_pretrained."""
    numbers = [line for line in lines if re.search(r"\d,", line)][:PAIRS] + EDGE_CASES[-5:]
    result = _auto_tokenizer(learned_spm_model_file, numbers, True, tmp_path)
    assert result["class"] == "AlbertTfTokenizerFast"
    full = tokenization.FullTokenizer(None, True, learned_spm_model_file)
    ids = [original_ids(full, text, True) for text in numbers]
    assert result["single"] == [[2] + one + [3] for one in ids], result["version"]
    assert result["saved"] == ["AlbertTfTokenizerFast", result["single"]]
    for max_length in MAX_LENGTHS:
        input_ids, type_ids, _ = result["pairs"][str(max_length)]
        for index in range(len(numbers) - 1):
            expected = transformers_pair(ids[index], ids[index + 1], max_length)
            assert (input_ids[index], type_ids[index]) == expected, (result["version"], index)
