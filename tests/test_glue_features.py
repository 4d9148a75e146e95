"""GLUE features: layout and truncation by hand, TFRecord round trip, cache names."""

import logging as std_logging
import os

import numpy as np
import pytest
import sentencepiece as spm

from albert_tf.text import tokenization
from albert_tf.glue import features, processors
from albert_tf.glue import task as glue_task
from albert_tf.glue.processors import InputExample


class _SpaceTokenizer:
    """Whitespace tokens with ids = their position in a fixed list: truncation checked by hand."""

    def __init__(self, words):
        self.vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "[CLS]", "[SEP]"] + words)}

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[t] for t in tokens]


WORDS = [f"a{i}" for i in range(12)] + [f"b{i}" for i in range(12)]


def _ids(tokens, tokenizer):
    return tokenizer.convert_tokens_to_ids(tokens)


def test_pair_layout_and_truncation_from_the_longer_side():
    tok = _SpaceTokenizer(WORDS)
    example = InputExample("g", " ".join(WORDS[:10]), " ".join(WORDS[12:15]), "1")
    feature = features.convert_single_example(0, example, ["0", "1"], 12, tok, "mrpc")
    # budget 12 - 3 = 9: a (10) loses 4 tokens, b (3) keeps all
    expected = ["[CLS]"] + WORDS[:6] + ["[SEP]"] + WORDS[12:15] + ["[SEP]"]
    assert feature.input_ids == _ids(expected, tok)
    assert feature.input_mask == [1] * 12
    assert feature.segment_ids == [0] * 8 + [1] * 4
    assert feature.label_id == 1


def test_the_original_example_dumps_only_at_verbosity_1(caplog):
    """The original logged its first 5 examples per split at INFO: more than half of a short
    run_classifier.py log. They are details now: `-v 1` (absl's logger at DEBUG) shows them."""
    tok = _SpaceTokenizer(WORDS)
    example = InputExample("dev-3", " ".join(WORDS[:3]), None, "1")
    dumps = {}
    for level in (std_logging.INFO, std_logging.DEBUG):
        caplog.clear()
        with caplog.at_level(level, logger="absl"):
            for index in range(7):
                features.convert_single_example(index, example, ["0", "1"], 8, tok, "mrpc")
        dumps[level] = [record for record in caplog.records if "*** Example" in record.getMessage()]
    assert not dumps[std_logging.INFO] and len(dumps[std_logging.DEBUG]) == 5


def test_tie_pops_from_b_and_padding():
    tok = _SpaceTokenizer(WORDS)
    example = InputExample("g", " ".join(WORDS[:5]), " ".join(WORDS[12:17]), "0")
    feature = features.convert_single_example(0, example, ["0", "1"], 14, tok, "rte")
    # budget 11: (5,5) fits -> no truncation; at 11 slots: 5+5=10 <= 11, so padding 14-13=1
    assert feature.input_ids == _ids(["[CLS]"] + WORDS[:5] + ["[SEP]"] + WORDS[12:17] + ["[SEP]"], tok) + [0]
    assert feature.input_mask == [1] * 13 + [0]
    assert feature.segment_ids == [0] * 7 + [1] * 6 + [0]
    feature = features.convert_single_example(0, example, ["0", "1"], 11, tok, "rte")
    # budget 8: (5,5) -> b pops on the tie (5,4) -> a pops (4,4)
    assert feature.input_ids == _ids(["[CLS]"] + WORDS[:4] + ["[SEP]"] + WORDS[12:16] + ["[SEP]"], tok)


def test_single_sequence_cut_to_s_minus_2_and_regression_label():
    tok = _SpaceTokenizer(WORDS)
    example = InputExample("g", " ".join(WORDS[:10]), None, 3.25)
    feature = features.convert_single_example(0, example, [None], 8, tok, "sts-b")
    assert feature.input_ids == _ids(["[CLS]"] + WORDS[:6] + ["[SEP]"], tok)
    assert feature.segment_ids == [0] * 8
    assert feature.label_id == 3.25
    empty_b = InputExample("g", " ".join(WORDS[:2]), "", 1.0)
    feature = features.convert_single_example(0, empty_b, [None], 6, tok, "sts-b")
    assert feature.input_ids == _ids(["[CLS]", "a0", "a1", "[SEP]"], tok) + [0, 0]


def test_unknown_label_rejected():
    with pytest.raises(ValueError, match=r"example g: label '2' is not one of \['0', '1'\]"):
        features.convert_single_example(0, InputExample("g", "a0", None, "2"), ["0", "1"], 8,
                                        _SpaceTokenizer(WORDS), "sst-2")


def test_sentencepiece_ids_match_sentencepiece(spm_model_file):
    tok = tokenization.FullTokenizer(None, True, spm_model_file)
    sp = spm.SentencePieceProcessor(model_file=spm_model_file)
    text_a, text_b = "the jury said it did find", "that the election was conducted"
    feature = features.convert_single_example(0, InputExample("g", text_a, text_b, "1"), ["0", "1"],
                                              32, tok, "mrpc")
    expected = [2] + sp.encode(text_a) + [3] + sp.encode(text_b) + [3]
    assert feature.input_ids[:len(expected)] == expected
    assert feature.input_ids[len(expected):] == [0] * (32 - len(expected))


def _dataset(path, seq, task, batch_size):
    """The records' batches as the classifier task reads its dev and test sets."""
    num_labels = 1 if features.is_regression(task) else 2
    return glue_task.ClassifierTask(None, task, num_labels, seq).dataset_of(path, batch_size)


def _round_trip(tmp_path, task, examples, labels, seq):
    tok = _SpaceTokenizer(WORDS)
    path = str(tmp_path / f"{task}.tf_record")
    assert features.write_records(examples, labels, seq, tok, path, task) == len(examples)
    batches = list(_dataset(path, seq, task, 2))
    merged = {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
    expected = [features.convert_single_example(i, e, labels, seq, tok, task) for i, e in enumerate(examples)]
    np.testing.assert_array_equal(merged["input_ids"], [f.input_ids for f in expected])
    np.testing.assert_array_equal(merged["input_mask"], [f.input_mask for f in expected])
    np.testing.assert_array_equal(merged["segment_ids"], [f.segment_ids for f in expected])
    np.testing.assert_array_equal(merged["is_real_example"], [1] * len(examples))
    assert [name for name in os.listdir(tmp_path) if ".tmp-" in name] == []
    return merged


def test_tfrecord_round_trip(tmp_path):
    examples = [InputExample(str(i), " ".join(WORDS[:i + 1]), " ".join(WORDS[12:12 + i]), str(i % 2))
                for i in range(5)]
    merged = _round_trip(tmp_path, "mrpc", examples, ["0", "1"], 10)
    assert merged["label_ids"].dtype == np.int32 and merged["input_ids"].dtype == np.int32
    np.testing.assert_array_equal(merged["label_ids"], [0, 1, 0, 1, 0])


def test_tfrecord_regression_labels_are_float32(tmp_path):
    examples = [InputExample(str(i), " ".join(WORDS[:3]), None, 0.5 * i) for i in range(3)]
    merged = _round_trip(tmp_path, "sts-b", examples, [None], 6)
    assert merged["label_ids"].dtype == np.float32
    np.testing.assert_allclose(merged["label_ids"], [0.0, 0.5, 1.0])


def test_cache_name_encodes_every_dependency(tmp_path):
    data = tmp_path / "SST-2" / "train.tsv"
    data.parent.mkdir()
    data.write_text("sentence\tlabel\na0 a1\t1\n")
    vocab = tmp_path / "vocab.model"
    vocab.write_bytes(b"model one")
    cache = str(tmp_path / "cache")

    def name(**overrides):
        args = dict(cached_dir=cache, task_name="sst-2", split="train", max_seq_length=128,
                    data_file=str(data), vocab_file=str(vocab), do_lower_case=True, use_spm=True)
        args.update(overrides)
        return os.path.basename(features.cached_record_path(**args))

    base = name()
    assert base.startswith("sst-2_train_seq128_uncased_spm-") and base.endswith(".tf_record")
    variants = {name(max_seq_length=64), name(do_lower_case=False), name(use_spm=False),
                name(split="dev"), name(task_name="cola")}
    assert base not in variants and len(variants) == 5
    vocab.write_bytes(b"model two")
    assert name() != base
    vocab.write_bytes(b"model one")
    assert name() == base
    data.write_text("sentence\tlabel\na0 a2\t1\n")
    assert name() != base


def test_get_or_create_reuses_only_an_up_to_date_cache(tmp_path):
    data_dir = tmp_path / "glue"
    (data_dir / "SST-2").mkdir(parents=True)
    (data_dir / "SST-2" / "train.tsv").write_text("sentence\tlabel\na0 a1\t1\nb0\t0\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("x\n")
    processor = processors.get_processor("sst-2", use_spm=False, do_lower_case=True)
    cache = str(tmp_path / "cache")
    args = dict(processor=processor, data_dir=str(data_dir), split="train", task_name="sst-2",
                tokenizer=_SpaceTokenizer(WORDS), cached_dir=cache, vocab_file=str(vocab),
                do_lower_case=True, use_spm=False)
    path, examples = features.get_or_create_records(max_seq_length=8, **args)
    assert len(examples) == 2 and os.path.exists(path)
    stamp = os.stat(path).st_mtime_ns
    again, _ = features.get_or_create_records(max_seq_length=8, **args)
    assert again == path and os.stat(path).st_mtime_ns == stamp
    longer, _ = features.get_or_create_records(max_seq_length=16, **args)
    assert longer != path
    batch = next(iter(_dataset(longer, 16, "sst-2", 2)))
    assert batch["input_ids"].shape == (2, 16)
    assert sorted(os.listdir(cache)) == sorted([os.path.basename(path), os.path.basename(longer)])
