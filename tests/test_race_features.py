"""RACE features against SentencePiece itself, both layouts, and the keyed TFRecord cache."""

import numpy as np
import pytest
import sentencepiece as spm

from albert_tf.files import feature_records
from albert_tf.text import tokenization
from albert_tf.race import cache, examples, features, prepare, reader
from tests import race_fixtures

CLS, SEP = 2, 3


@pytest.fixture
def tokenizer(spm_model_file):
    return tokenization.FullTokenizer(None, do_lower_case=True, spm_model_file=spm_model_file)


@pytest.fixture
def sp(spm_model_file):
    return spm.SentencePieceProcessor(model_file=spm_model_file)


def _first_example(tmp_path):
    race_fixtures.write_all_txt(tmp_path, "train", race_fixtures.make_articles(2))
    normalize = examples.text_normalizer(use_spm=True, do_lower_case=True)
    return examples.read_examples(str(tmp_path), "train", ("middle",), normalize)


def test_cloze_and_plain_questions():
    assert examples.question_with_option("Tom buys _ at the market.", "apples") == (
        "Tom buys apples at the market.")
    assert examples.question_with_option("Where does Tom go?", "the park") == (
        "Where does Tom go? the park")


def test_examples_are_normalised_and_combined_like_the_original(tmp_path):
    data = race_fixtures.make_articles(2)
    race_fixtures.write_all_txt(tmp_path, "train", data)
    normalize = examples.text_normalizer(use_spm=True, do_lower_case=True)
    result = examples.read_examples(str(tmp_path), "train", ("middle", "high"), normalize)
    assert len(result) == 4 * 3
    article = data["middle"][0]
    plain, cloze = result[0], result[1]
    assert plain.context == article["article"].lower()
    assert (plain.example_id, plain.question_index, plain.level) == ("middle1.txt", 0, "middle")
    assert plain.choices == tuple(f"{article['questions'][0]} {option}".lower()
                                  for option in article["options"][0])
    assert "_" in article["questions"][1]
    assert cloze.choices == tuple(article["questions"][1].replace("_", option).lower()
                                  for option in article["options"][1])
    assert [e.label for e in result[:3]] == ["ABCD".index(a) for a in article["answers"]]
    cased = examples.read_examples(
        str(tmp_path), "train", ("middle",), examples.text_normalizer(True, False))
    assert cased[0].context == article["article"]


@pytest.mark.parametrize("max_seq_length,max_qa_length", [(32, 6), (24, 20), (128, 128 - 3)])
def test_features_match_sentencepiece(tmp_path, tokenizer, sp, max_seq_length, max_qa_length):
    example = _first_example(tmp_path)[1]
    converted = features.FeatureConverter(tokenizer, max_seq_length, max_qa_length).convert(example)
    context_ids = sp.encode(example.context)
    for choice, ids, mask, segments in zip(example.choices, converted.input_ids,
                                           converted.input_mask, converted.segment_ids):
        qa_ids = sp.encode(choice)[-max_qa_length:]
        kept_context = context_ids[:max_seq_length - 3 - len(qa_ids)]
        expected = [CLS] + kept_context + [SEP] + qa_ids + [SEP]
        padding = max_seq_length - len(expected)
        assert ids == expected + [0] * padding
        assert mask == [1] * len(expected) + [0] * padding
        assert segments == [0] * (len(kept_context) + 2) + [1] * (len(qa_ids) + 1) + [0] * padding
    assert converted.label_id == example.label
    assert converted.level_id == 0


def test_truncation_keeps_the_last_qa_tokens_and_the_start_of_the_article():
    context = [f"c{i}" for i in range(20)]
    qa = [f"q{i}" for i in range(10)]
    tokens, segments = features.choice_tokens(context, qa, max_seq_length=16, max_qa_length=4)
    assert tokens == ["[CLS]"] + context[:9] + ["[SEP]"] + qa[-4:] + ["[SEP]"]
    assert segments == [0] * 11 + [1] * 5
    tokens, _ = features.choice_tokens(context[:3], qa[:2], max_seq_length=16, max_qa_length=4)
    assert tokens == ["[CLS]", "c0", "c1", "c2", "[SEP]", "q0", "q1", "[SEP]"]


@pytest.mark.parametrize("max_seq_length,max_qa_length,flag", [
    (3, 1, "--max_seq_length=3"), (64, 0, "--max_qa_length=0"), (64, 62, "--max_qa_length=62")])
def test_bad_lengths_are_rejected(max_seq_length, max_qa_length, flag):
    with pytest.raises(ValueError, match=flag):
        features.check_lengths(max_seq_length, max_qa_length)


def _cache_bytes(data_dir, split, tokenizer, path):
    normalize = examples.text_normalizer(True, True)
    converter = features.FeatureConverter(tokenizer, 64, 16)
    found = examples.read_examples(str(data_dir), split, reader.LEVELS, normalize)
    count = cache.write((converter.convert(e) for e in found), str(path))
    return count, path.read_bytes()


def test_both_layouts_give_identical_cached_features(tmp_path, tokenizer):
    data = race_fixtures.make_articles(num_per_level=11)
    race_fixtures.write_all_txt(tmp_path / "original", "dev", data)
    race_fixtures.write_per_article(tmp_path / "official", "dev", data)
    count_a, bytes_a = _cache_bytes(tmp_path / "original", "dev", tokenizer, tmp_path / "a.tf_record")
    count_b, bytes_b = _cache_bytes(tmp_path / "official", "dev", tokenizer, tmp_path / "b.tf_record")
    assert count_a == count_b == 2 * 11 * 3
    assert bytes_a == bytes_b


def test_cache_round_trip(tmp_path, tokenizer):
    found = _first_example(tmp_path)
    converter = features.FeatureConverter(tokenizer, 48, 12)
    expected = [converter.convert(e) for e in found]
    path = str(tmp_path / "cache.tf_record")
    assert cache.write(expected, path) == len(expected)
    records = list(cache.dataset(path, 48).as_numpy_iterator())
    assert len(records) == len(expected)
    for record, feature in zip(records, expected):
        assert record["input_ids"].shape == (4, 48) and record["input_ids"].dtype == np.int32
        np.testing.assert_array_equal(record["input_ids"], feature.input_ids)
        np.testing.assert_array_equal(record["input_mask"], feature.input_mask)
        np.testing.assert_array_equal(record["segment_ids"], feature.segment_ids)
        assert record["label_ids"] == feature.label_id
        assert record["is_real_example"] == 1
        assert record["level_ids"] == feature.level_id
        assert record["question_index"] == feature.question_index
        assert record["example_id"].decode() == feature.example_id
    with pytest.raises(FileNotFoundError, match="missing.tf_record"):
        cache.dataset(str(tmp_path / "missing.tf_record"), 48)


def test_cache_names_change_with_every_setting_they_depend_on(tmp_path, spm_model_file):
    fingerprint = feature_records.file_fingerprint(spm_model_file, None)
    other = tmp_path / "other.model"
    other.write_bytes(open(spm_model_file, "rb").read() + b"x")
    base = dict(split="train", levels=("middle", "high"), max_seq_length=512, max_qa_length=128,
                vocab_fingerprint=fingerprint, do_lower_case=True)
    variants = [dict(split="dev"), dict(levels=("high",)), dict(levels=("middle",)),
                dict(max_seq_length=256), dict(max_qa_length=64), dict(do_lower_case=False),
                dict(vocab_fingerprint=feature_records.file_fingerprint(str(other)))]
    keys = [cache.cache_key(**base)] + [cache.cache_key(**{**base, **v}) for v in variants]
    assert len(set(keys)) == len(keys)
    assert keys[0] == f"race-train-middle+high-seq512-qa128-uncased-vocab{fingerprint}"
    assert feature_records.keyed_path(None, "/out", keys[0]) == f"/out/{keys[0]}.tf_record"
    assert feature_records.keyed_path("/c/train.tf_record", "/out", keys[0]) == f"/c/train.{keys[0]}.tf_record"
    assert feature_records.keyed_path("/c/train", "/out", keys[0]) == f"/c/train.{keys[0]}.tf_record"
    # Level order does not depend on the order the flags produced them in.
    assert cache.cache_key(**{**base, "levels": ("high", "middle")}) == keys[0]


def test_wordpiece_vocabulary_path(tmp_path):
    data = race_fixtures.make_articles(1)
    race_fixtures.write_all_txt(tmp_path, "dev", data)
    words = sorted({word for article in data["middle"] + data["high"]
                    for text in [article["article"], *article["questions"],
                                 *sum(article["options"], [])]
                    for word in tokenization.BasicTokenizer(True).tokenize(text)})
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + words) + "\n")
    settings = prepare.CacheSettings(str(tmp_path), reader.LEVELS, 64, 16, True,
                                     vocab_file=str(vocab_file), default_dir=str(tmp_path))
    path = prepare.prepare_split(settings, "dev")
    assert f"vocab{feature_records.file_fingerprint(str(vocab_file))}" in path
    record = next(cache.dataset(path, 64).as_numpy_iterator())
    vocab = vocab_file.read_text().splitlines()
    tokens = [vocab[i] for i, m in zip(record["input_ids"][0], record["input_mask"][0]) if m]
    article = data["middle"][0]
    question = f"{article['questions'][0]} {article['options'][0][0]}".lower()
    qa = tokenization.BasicTokenizer(True).tokenize(question)
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert tokens[-1 - len(qa):-1] == qa
    assert tokens[1:4] == article["article"].lower().split()[:3]
    assert "[UNK]" not in tokens
