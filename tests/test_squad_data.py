"""SQuAD reading, alignment, features and caches against real paragraphs and hand-made fixtures."""

import json
import os
import pickle

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import tokenization
from albert_tf.squad import alignment, metrics, feature_cache, features, reader, records

SEQ, STRIDE, QUERY = 64, 16, 12

# Paragraphs the SentencePiece text differs from: accents (stripped by preprocess_text), numbers
# with thousands commas (the digit-comma re-encoding), irregular whitespace (collapsed).
HARD_PARAGRAPHS = [
    ("Café Müller, the cafeteria in Zürich run by José Ñúñez, opened in 1954 beside the "
     "Théâtre de l'Odéon; its crème brûlée was famous.",
     ["Café Müller", "José Ñúñez", "1954", "crème brûlée", "Théâtre de l'Odéon"]),
    ("The city had 1,250,000 residents in 1990, and 2,400,000 by 2010, when the budget "
     "reached $3,500,000,000 for 12,000 workers.",
     ["1,250,000", "2,400,000", "$3,500,000,000", "12,000 workers", "1990"]),
    ("Irregular   spacing\there:  the river\n\nflows  north   for  120 miles \t before "
     "joining   the  sea   at  Port  Royal.",
     ["120 miles", "Port  Royal", "the river\n\nflows  north", "spacing\there"]),
]


def _squad_json(paragraphs, version=None):
    """Official layout; each question asks for one answer (found by str.find)."""
    data = {"data": [{"title": "fixture", "paragraphs": []}]}
    if version:
        data["version"] = version
    for p, (context, answers) in enumerate(paragraphs):
        qas = [{"id": f"p{p}q{a}", "question": f"Where is answer {a}?",
                "answers": [{"text": text, "answer_start": context.index(text)}]}
               for a, text in enumerate(answers)]
        data["data"][0]["paragraphs"].append({"context": context, "qas": qas})
    return data


def _write(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(spm_model_file):
    return tokenization.FullTokenizer(None, do_lower_case=True, spm_model_file=spm_model_file)


def _recovered_answers(examples, feats):
    """qas id → the set of original-text spans the training labels point at."""
    found = {}
    for f in feats:
        if f.is_impossible:
            continue
        example = examples[f.example_index]
        start, end = f.start_position - f.doc_offset, f.end_position - f.doc_offset
        text = example.paragraph_text[
            f.tok_start_to_orig_index[start]:f.tok_end_to_orig_index[end] + 1].strip()
        found.setdefault(example.qas_id, set()).add(text)
    return found


def _word_extended(context, start, text):
    """The answer grown to whole words: what a span of whole pieces can at most cover."""
    begin, end = start, start + len(text)
    while begin > 0 and not context[begin - 1].isspace():
        begin -= 1
    while end < len(context) and not context[end].isspace():
        end += 1
    return context[begin:end]


def test_training_spans_recover_the_gold_answers_on_real_squad(real_data, tokenizer):
    examples, report = reader.read_squad_examples(real_data["squad_v1_excerpt"], True)
    assert len(examples) == 5 and not report.skipped
    feats, freport = features.convert_examples_to_features(
        examples, tokenizer, SEQ, STRIDE, QUERY, True, True)
    assert not freport.mismatched
    found = _recovered_answers(examples, feats)
    assert set(found) == {e.qas_id for e in examples}
    for example in examples:
        gold = example.orig_answer_text
        (text,) = found[example.qas_id]  # Every window holding the answer recovers the same text.
        if gold == "Father Julius Nieuwl":
            # The real data's answer stops inside "Nieuwland"; pieces cannot, so the span grows
            # to a piece boundary inside the same word.
            assert text.startswith(gold)
            assert text in _word_extended(example.paragraph_text, example.start_position, gold)
        else:
            assert metrics.normalize_answer(text) == metrics.normalize_answer(gold)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_training_spans_recover_answers_with_accents_commas_and_spaces(
        tmp_path, tokenizer, do_lower_case):
    path = _write(tmp_path, "hard.json", _squad_json(HARD_PARAGRAPHS))
    examples, _ = reader.read_squad_examples(path, True)
    feats, report = features.convert_examples_to_features(
        examples, tokenizer, SEQ, STRIDE, QUERY, True, do_lower_case)
    assert not report.mismatched and not report.bad_answer_spans
    found = _recovered_answers(examples, feats)
    for example in examples:
        (text,) = found[example.qas_id]
        # Recovered from the ORIGINAL characters: accents, commas and spacing survive.
        assert text == example.orig_answer_text
        assert (metrics.normalize_answer(text)
                == metrics.normalize_answer(example.orig_answer_text))


@pytest.mark.parametrize("paragraph", [p for p, _ in HARD_PARAGRAPHS])
def test_alignment_maps_each_piece_to_the_original_characters_it_spells(tokenizer, paragraph):
    pieces = tokenization.encode_pieces(
        tokenizer.sp_model, tokenization.preprocess_text(paragraph, lower=True))
    aligned = alignment.align_pieces(paragraph, pieces, do_lower_case=True)
    for piece, start, end in zip(pieces, aligned.tok_start_to_orig_index,
                                 aligned.tok_end_to_orig_index):
        if piece == tokenization.SPIECE_UNDERLINE:
            continue  # A lone "▁" (a space) borrows a neighbour's position, as in the original.
        original = paragraph[start:end + 1]  # accents, commas and odd spacing intact
        spelled = tokenization.preprocess_text(original, lower=True).replace(" ", "")
        assert spelled == piece.replace(tokenization.SPIECE_UNDERLINE, ""), (piece, original)


def test_alignment_reports_mismatch_for_text_the_pieces_do_not_spell():
    pieces = ["▁completely", "▁different"]
    assert alignment.align_pieces("nothing alike at all here, none", pieces, True) is None


def test_feature_layout_segments_p_mask_unique_ids_and_windows(real_data, tokenizer):
    examples, _ = reader.read_squad_examples(real_data["squad_v1_excerpt"], False)
    feats, _ = features.convert_examples_to_features(
        examples, tokenizer, SEQ, STRIDE, QUERY, False, True)
    assert [f.unique_id for f in feats] == list(range(1000000000, 1000000000 + len(feats)))
    cls_id, sep_id = (tokenizer.sp_model.PieceToId(p) for p in ("[CLS]", "[SEP]"))
    for f in feats:
        example = examples[f.example_index]
        query = tokenization.encode_ids(tokenizer.sp_model, tokenization.preprocess_text(
            example.question_text, lower=True))[:QUERY]
        n_doc = len(f.tok_start_to_orig_index)
        n = len(query) + n_doc + 3
        assert len(f.input_ids) == SEQ and f.doc_offset == len(query) + 2
        assert f.input_ids[0] == cls_id and f.input_ids[1:len(query) + 1] == query
        assert f.input_ids[len(query) + 1] == sep_id and f.input_ids[n - 1] == sep_id
        assert f.input_ids[n:] == [0] * (SEQ - n) and f.input_mask == [1] * n + [0] * (SEQ - n)
        assert f.segment_ids == [0] * (len(query) + 2) + [1] * (n_doc + 1) + [0] * (SEQ - n)
        assert f.p_mask == [0] + [1] * (len(query) + 1) + [0] * n_doc + [1] * (SEQ - n + 1)
        assert sorted(f.token_is_max_context) == list(range(f.doc_offset, f.doc_offset + n_doc))
    # Every paragraph piece has its maximum context in exactly one window.
    for index in range(len(examples)):
        windows = [f for f in feats if f.example_index == index]
        assert len(windows) > 1  # 64-token windows over ~130-piece paragraphs.
        total = sum(sum(f.token_is_max_context.values()) for f in windows)
        pieces = tokenization.encode_pieces(tokenizer.sp_model, tokenization.preprocess_text(
            examples[index].paragraph_text, lower=True))
        assert total == len(pieces)


def test_doc_spans_and_max_context_follow_the_original_rules():
    spans = features.doc_spans_for(10, 4, 3)
    assert spans == [(0, 4), (3, 4), (6, 4)]
    assert features.doc_spans_for(10, 4, 6) == [(0, 4), (4, 4), (8, 2)]  # stride capped at length
    # Piece 5: span 1 (3..6) min(2, 1) = 1 beats span 2 (6..9), which does not hold it.
    assert features.check_is_max_context(spans, 1, 5)
    assert not features.check_is_max_context(spans, 0, 5)
    # Piece 3: span 0 min(3, 0) + 0.04 ties span 1 min(0, 3) + 0.04: the first span wins.
    assert features.check_is_max_context(spans, 0, 3)
    assert not features.check_is_max_context(spans, 1, 3)
    # Equal min(left, right): the longer span wins by 0.01 per piece.
    assert features.check_is_max_context([(0, 5), (2, 3)], 0, 3)
    assert not features.check_is_max_context([(0, 5), (2, 3)], 1, 3)
    # More context on both sides beats a longer window: min(3, 2) = 2 vs min(1, 5) = 1.
    assert features.check_is_max_context([(0, 6), (2, 9)], 0, 3)


V2_FIXTURE = {
    "version": "v2.0",
    "data": [{"title": "Rivers", "paragraphs": [{
        "context": "The Nile flows north through Egypt into the Mediterranean Sea. "
                   "The Amazon carries more water than any other river.",
        "qas": [
            {"id": "a1", "question": "Where does the Nile flow into?", "is_impossible": False,
             "answers": [{"text": "the Mediterranean Sea", "answer_start": 40}]},
            {"id": "u1", "question": "Who built the Amazon?", "is_impossible": True,
             "answers": [],
             "plausible_answers": [{"text": "The Amazon", "answer_start": 63}]},
        ]}]}],
}


def test_v2_unanswerable_questions_label_cls_and_answerable_windows_elsewhere(
        tmp_path, tokenizer):
    path = _write(tmp_path, "v2.json", V2_FIXTURE)
    examples, _ = reader.read_squad_examples(path, True)
    assert [e.is_impossible for e in examples] == [False, True]
    assert examples[1].start_position == -1 and examples[1].orig_answer_text == ""
    feats, report = features.convert_examples_to_features(
        examples, tokenizer, 32, 8, 12, True, True)
    by_question = {}
    for f in feats:
        by_question.setdefault(examples[f.example_index].qas_id, []).append(f)
    assert all(f.start_position == 0 == f.end_position and f.is_impossible
               for f in by_question["u1"])
    positives = [f for f in by_question["a1"] if not f.is_impossible]
    negatives = [f for f in by_question["a1"] if f.is_impossible]
    assert positives and negatives  # windows without the whole answer point at [CLS] too (v1 too)
    assert all(f.start_position == 0 == f.end_position for f in negatives)
    assert report.num_positive == len(positives)
    assert report.num_negative == len(feats) - len(positives)


def test_long_question_is_truncated_and_counted(tmp_path, tokenizer):
    data = _squad_json([("Short context with an answer in it.", ["an answer"])])
    data["data"][0]["paragraphs"][0]["qas"][0]["question"] = " ".join(["why"] * 200)
    examples, _ = reader.read_squad_examples(_write(tmp_path, "long.json", data), True)
    feats, report = features.convert_examples_to_features(
        examples, tokenizer, 32, 8, 12, True, True)
    assert report.truncated_questions == ["p0q0"]
    assert all(f.doc_offset == 12 + 2 and len(f.input_ids) == 32 for f in feats)
    assert _recovered_answers(examples, feats)["p0q0"] == {"an answer"}


def test_max_seq_length_too_small_for_the_query_is_an_error(tokenizer):
    with pytest.raises(ValueError, match=r"max_seq_length \(15\).*max_query_length \(12\) \+ 3"):
        features.convert_examples_to_features([], tokenizer, 15, 8, 12, True, True)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("data"), r"bad\.json: expected a JSON object with a list under \"data\""),
    (lambda d: d["data"][0].pop("paragraphs"), r"bad\.json: data\[0\] has no \"paragraphs\""),
    (lambda d: d["data"][0]["paragraphs"][1].pop("qas"),
     r"bad\.json: data\[0\]\.paragraphs\[1\] has no \"qas\""),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"),
     r"data\[0\]\.paragraphs\[0\] has no \"context\""),
    (lambda d: d["data"][0]["paragraphs"][2]["qas"][0].pop("id"),
     r"data\[0\]\.paragraphs\[2\]\.qas\[0\] has no \"id\""),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].pop("answer_start"),
     r"\(id p0q0\): \"answers\" must be a list"),
])
def test_malformed_json_is_rejected_naming_file_and_path(tmp_path, mutate, message):
    data = _squad_json(HARD_PARAGRAPHS)
    mutate(data)
    path = _write(tmp_path, "bad.json", data)
    for is_training in (True, False):
        with pytest.raises(reader.SquadFormatError, match=message):
            reader.read_squad_examples(path, is_training)


def test_not_json_and_missing_file_are_clear_errors(tmp_path):
    with pytest.raises(reader.SquadFormatError, match=r"notjson\.json: not valid JSON"):
        reader.read_squad_examples(_write(tmp_path, "notjson.json", "{oops"), False)
    with pytest.raises(FileNotFoundError, match=r"absent\.json: SQuAD file not found"):
        reader.read_squad_examples(str(tmp_path / "absent.json"), False)


def test_bad_answers_are_skipped_counted_and_named_without_stopping(tmp_path, caplog):
    data = _squad_json(HARD_PARAGRAPHS)
    qas = data["data"][0]["paragraphs"][1]["qas"]
    qas[0]["answers"][0]["answer_start"] += 3  # points at the wrong characters
    qas[1]["answers"] = []  # no answer, not marked impossible
    path = _write(tmp_path, "skips.json", data)
    examples, report = reader.read_squad_examples(path, True)
    assert set(report.skipped) == {"p1q0", "p1q1"}
    assert "does not point at the answer text '1,250,000'" in report.skipped["p1q0"]
    assert report.num_questions == 14 and len(examples) == 12
    assert "p1q0" in caplog.text and "skipped 2 of 14 questions" in caplog.text
    # Prediction does not need the answers: every question is kept.
    examples, report = reader.read_squad_examples(path, False)
    assert len(examples) == 14 and not report.skipped


def test_feature_cache_round_trip_is_keyed_and_never_pickled(
        tmp_path, real_data, tokenizer, spm_model_file):
    squad = real_data["squad_v1_excerpt"]
    examples, _ = reader.read_squad_examples(squad, False)
    feats, _ = features.convert_examples_to_features(
        examples, tokenizer, SEQ, STRIDE, QUERY, False, True)
    key = feature_cache.cache_key(squad, spm_model_file, SEQ, STRIDE, QUERY, True, False)
    record_path, side_path = feature_cache.cache_paths(
        str(tmp_path / "eval.tf_record"), str(tmp_path / "eval_left"), key)
    assert record_path == str(tmp_path / f"eval.{key}.tf_record")
    assert side_path == str(tmp_path / f"eval_left.{key}.json")
    assert feature_cache.read(key, record_path, side_path) is None
    feature_cache.write(feats, key, record_path, side_path, is_training=False)

    num, meta = feature_cache.read(key, record_path, side_path)
    assert num == len(feats) == len(meta)
    for original, loaded in zip(feats, meta):
        for name in ("unique_id", "example_index", "doc_offset", "tok_start_to_orig_index",
                     "tok_end_to_orig_index", "token_is_max_context"):
            assert getattr(loaded, name) == getattr(original, name)
    json.loads(open(side_path, encoding="utf-8").read())  # plain JSON
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(open(side_path, "rb").read())
    parsed = list(records.tfrecord_dataset(record_path, SEQ, False).as_numpy_iterator())
    assert len(parsed) == len(feats)
    for record, feature in zip(parsed, feats):
        assert set(record) == {"unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask"}
        assert record["unique_ids"] == feature.unique_id
        for name in records.SEQUENCE_FIELDS:
            assert record[name].dtype == np.int32
            np.testing.assert_array_equal(record[name], getattr(feature, name))

    # Every flag the features depend on changes the name.
    changed = [
        feature_cache.cache_key(squad, spm_model_file, 128, STRIDE, QUERY, True, False),
        feature_cache.cache_key(squad, spm_model_file, SEQ, 8, QUERY, True, False),
        feature_cache.cache_key(squad, spm_model_file, SEQ, STRIDE, 20, True, False),
        feature_cache.cache_key(squad, spm_model_file, SEQ, STRIDE, QUERY, False, False),
        feature_cache.cache_key(squad, spm_model_file, SEQ, STRIDE, QUERY, True, True),
    ]
    other = _write(tmp_path, "other.json", _squad_json(HARD_PARAGRAPHS))
    changed.append(feature_cache.cache_key(other, spm_model_file, SEQ, STRIDE, QUERY, True,
                                           False))
    changed.append(feature_cache.cache_key(squad, other, SEQ, STRIDE, QUERY, True, False))
    assert len(set(changed + [key])) == len(changed) + 1


def test_training_cache_records_carry_labels(tmp_path, tokenizer, spm_model_file):
    path = _write(tmp_path, "v2.json", V2_FIXTURE)
    examples, _ = reader.read_squad_examples(path, True)
    feats, _ = features.convert_examples_to_features(examples, tokenizer, 32, 8, 12, True, True)
    key = feature_cache.cache_key(path, spm_model_file, 32, 8, 12, True, True)
    record_path, side_path = feature_cache.cache_paths(str(tmp_path / "train"), None, key)
    assert record_path.endswith(f"train.{key}.tf_record") and os.path.basename(
        side_path) == f"train.{key}.json"
    feature_cache.write(feats, key, record_path, side_path, is_training=True)
    assert feature_cache.read(key, record_path, side_path) == (len(feats), [])
    parsed = list(records.tfrecord_dataset(record_path, 32, True).as_numpy_iterator())
    assert [int(r["start_positions"]) for r in parsed] == [f.start_position for f in feats]
    assert [int(r["is_impossible"]) for r in parsed] == [int(f.is_impossible) for f in feats]
    assert parsed[0]["input_ids"].dtype == np.int32
    # A side file that was renamed by hand (key inside differs) is refused.
    other_key = key.replace("seq32", "seq33")
    other_record, other_side = feature_cache.cache_paths(str(tmp_path / "train"), None,
                                                         other_key)
    tf.io.gfile.copy(record_path, other_record)
    tf.io.gfile.copy(side_path, other_side)
    with pytest.raises(ValueError, match="feature cache built for"):
        feature_cache.read(other_key, other_record, other_side)
