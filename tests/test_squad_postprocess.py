"""v1 / v2 post-processing on hand-made windows and logits, and the three output files."""

import json
import math

import numpy as np
import pytest

from albert_tf.squad import metrics, features, postprocess, reader

PARAGRAPH = "red fish and red fish"
# Word pieces and their characters: red(0-2) fish(4-7) and(9-11) red(13-15) fish(17-20).
WORD_STARTS, WORD_ENDS = [0, 4, 9, 13, 17], [2, 7, 11, 15, 20]
DOC_OFFSET = 2  # [CLS] q [SEP] then the 5 pieces at positions 2..6, [SEP] at 7.


def _feature(unique_id, example_index=0, max_context=(2, 3, 4, 5, 6)):
    return features.InputFeatures(
        unique_id=unique_id, example_index=example_index, doc_span_index=0,
        doc_offset=DOC_OFFSET, tok_start_to_orig_index=WORD_STARTS,
        tok_end_to_orig_index=WORD_ENDS,
        token_is_max_context={p: p in max_context for p in range(2, 7)},
        input_ids=None, input_mask=None, segment_ids=None, p_mask=None)


def _example(qid="q1"):
    return reader.SquadExample(qas_id=qid, question_text="?", paragraph_text=PARAGRAPH)


START = np.array([10, 0, 5, 0, 0, 4.9, 0, 0], np.float32)
END = np.array([10, 0, 0, 5, 1, 0, 4.9, 0], np.float32)


def test_v1_nbest_filters_dedupes_on_text_and_softmaxes():
    results = [postprocess.RawResultV1(1, START, END)]
    predictions, nbest = postprocess.predict_v1([_example()], [_feature(1)], results,
                                                n_best_size=3, max_answer_length=30)
    # Top-3 starts {0, 2, 5} × top-3 ends {0, 3, 6}; [CLS] and end < start are invalid.
    # (2,3) "red fish" 10, (2,6) whole text 9.9, (5,6) "red fish" 9.8 is a duplicate text.
    assert predictions == {"q1": "red fish"}
    assert [e["text"] for e in nbest["q1"]] == ["red fish", PARAGRAPH]
    assert [(e["start_logit"], e["end_logit"]) for e in nbest["q1"]] == [
        (5, 5), (5, pytest.approx(4.9))]
    p = 1 / (1 + math.exp(-0.1))
    assert [e["probability"] for e in nbest["q1"]] == pytest.approx([p, 1 - p])


def test_v1_max_answer_length_and_max_context_filters():
    results = [postprocess.RawResultV1(1, START, END)]
    _, nbest = postprocess.predict_v1([_example()], [_feature(1)], results, 3,
                                      max_answer_length=2)
    assert [e["text"] for e in nbest["q1"]] == ["red fish"]  # 5-piece span dropped
    assert nbest["q1"][0]["probability"] == 1.0
    # Start position 2 has its max context in another window: only (5,6) remains.
    _, nbest = postprocess.predict_v1([_example()], [_feature(1, max_context=(3, 4, 5, 6))],
                                      results, 3, 30)
    assert [(e["text"], e["start_logit"] + e["end_logit"]) for e in nbest["q1"]] == [
        ("red fish", pytest.approx(9.8))]


def test_v1_without_a_valid_span_or_window_predicts_empty():
    results = [postprocess.RawResultV1(1, START, END)]
    examples = [_example("q1"), _example("mismatched")]
    predictions, nbest = postprocess.predict_v1(examples, [_feature(1)], results,
                                                n_best_size=1, max_answer_length=30)
    assert predictions == {"q1": "empty", "mismatched": "empty"}
    assert nbest["q1"] == [{"text": "empty", "probability": 1.0, "start_logit": 0.0,
                            "end_logit": 0.0}]


def _v2_results():
    beam = postprocess.RawResultV2(
        1, start_top_log_probs=np.array([-0.1, -0.2, -5.0]),
        start_top_index=np.array([2, 5, 0]),
        end_top_log_probs=np.array([-0.3, -0.4, -0.1, -2.0, -0.1, -0.1]),
        end_top_index=np.array([3, 6, 6, 3, 0, 1]), cls_logits=1.5)
    cls_only = postprocess.RawResultV2(
        2, start_top_log_probs=np.array([-0.1, -0.2, -0.3]), start_top_index=np.array([0, 1, 7]),
        end_top_log_probs=np.zeros(6), end_top_index=np.array([0, 0, 1, 1, 7, 7]),
        cls_logits=0.5)
    return [beam, cls_only]


def test_v2_beam_nbest_null_score_and_threshold():
    examples = [_example("q1"), _example("mismatched")]
    feats = [_feature(1), _feature(2)]
    best, nbest, null_odds = postprocess.predict_v2(examples, feats, _v2_results(), 20, 30,
                                                    start_n_top=3, end_n_top=2)
    # (5,6) −0.3 "red fish", (2,3) −0.4 duplicate text, (2,6) −0.5; starts < doc_offset dropped.
    assert [(e["text"], e["start_log_prob"], e["end_log_prob"]) for e in nbest["q1"]] == [
        ("red fish", -0.2, -0.1), (PARAGRAPH, -0.1, -0.4)]
    assert best["q1"] == "red fish"
    assert null_odds["q1"] == 0.5  # the minimum cls_logits over the question's windows
    assert best["mismatched"] == "" and null_odds["mismatched"] == 1e6
    assert nbest["mismatched"] == [{"text": "", "probability": 1.0, "start_log_prob": -1e6,
                                    "end_log_prob": -1e6}]
    assert postprocess.apply_null_threshold(best, null_odds, None)["q1"] == "red fish"
    assert postprocess.apply_null_threshold(best, null_odds, 0.5)["q1"] == "red fish"
    assert postprocess.apply_null_threshold(best, null_odds, 0.4)["q1"] == ""


def test_output_files_have_the_official_formats(tmp_path):
    examples = [_example("q1"), _example("q2")]
    feats = [_feature(1, 0), _feature(2, 1)]
    best, nbest, null_odds = postprocess.predict_v2(examples, feats, _v2_results(), 20, 30, 3, 2)
    predictions = postprocess.apply_null_threshold(best, null_odds, 2.0)
    paths = postprocess.write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"]
    loaded = {k: json.loads(open(v, encoding="utf-8").read()) for k, v in paths.items()}
    # predictions.json: {qas_id: answer text} ("" = no answer), what the official script reads.
    assert loaded["predictions"] == {"q1": "red fish", "q2": ""}
    # null_odds.json: {qas_id: float}, the official script's --na-prob-file.
    assert loaded["null_odds"] == {"q1": 1.5, "q2": 0.5}
    for entries in loaded["nbest"].values():
        assert entries and all(list(e) == ["text", "probability", "start_log_prob",
                                           "end_log_prob"] for e in entries)
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    dataset = [{"paragraphs": [{"context": PARAGRAPH, "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "red fish", "answer_start": 0}]},
        {"id": "q2", "question": "?", "answers": []}]}]}]
    scored = metrics.evaluate_v2(dataset, loaded["predictions"], loaded["null_odds"], 2.0)
    assert scored["exact"] == 100.0 and scored["best_f1_thresh"] == 1.5
    v1_predictions, v1_nbest = postprocess.predict_v1(
        examples[:1], feats[:1], [postprocess.RawResultV1(1, START, END)], 3, 30)
    postprocess.write_prediction_files(str(tmp_path / "v1"), v1_predictions, v1_nbest)
    assert sorted(p.name for p in (tmp_path / "v1").iterdir()) == [
        "nbest_predictions.json", "predictions.json"]
    text = (tmp_path / "v1" / "predictions.json").read_text(encoding="utf-8")
    assert text == json.dumps({"q1": "red fish"}, indent=4) + "\n"
