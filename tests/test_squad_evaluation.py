"""Official SQuAD v1.1 / v2.0 scoring against hand-computed exact match and F1."""

import pytest

from albert_tf.squad import metrics


def _dataset(questions):
    """questions: (id, [gold texts]) in the official layout."""
    qas = [{"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
           for qid, golds in questions]
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_normalisation_drops_case_punctuation_articles_and_extra_spaces():
    assert metrics.normalize_answer("  The  U.S.  Army's, an ARMY!") == "us armys army"
    assert metrics.normalize_answer("theater of a-ha") == "theater of aha"  # words only
    assert metrics.normalize_answer("A") == ""


V1_CASES = [
    # id, gold answers, prediction, hand-computed EM, F1
    ("articles", ["tale of two cities"], "A Tale of Two Cities", 1, 1.0),
    ("punctuation", ["US"], "U.S.", 1, 1.0),
    ("partial", ["Paris"], "in Paris, France", 0, 0.5),  # P 1/3, R 1
    ("multi_gold", ["apple", "apple pie recipe"], "an apple pie", 0, 0.8),  # max(2/3, 0.8)
    ("empty_prediction", ["forty"], "", 0, 0.0),
    ("wrong", ["red"], "blue", 0, 0.0),
]


def test_v1_exact_match_and_f1_on_crafted_cases():
    for qid, golds, prediction, em, f1 in V1_CASES:
        assert max(metrics.exact_match_score_v1(prediction, g) for g in golds) == em, qid
        assert max(metrics.f1_score_v1(prediction, g) for g in golds) == pytest.approx(f1), qid
    dataset = _dataset([(qid, golds) for qid, golds, *_ in V1_CASES])
    predictions = {qid: p for qid, _, p, *_ in V1_CASES}
    result = metrics.evaluate_v1(dataset, predictions)
    assert result["exact_match"] == pytest.approx(100 * 2 / 6)
    assert result["f1"] == pytest.approx(100 * (1 + 1 + 0.5 + 0.8) / 6)
    # A question without a prediction scores 0 but still counts.
    del predictions["articles"]
    assert metrics.evaluate_v1(dataset, predictions)["exact_match"] == pytest.approx(100 / 6)


def test_v1_two_empty_strings_score_zero_f1_but_v2_scores_them_one():
    assert metrics.f1_score_v1("", "") == 0.0
    assert metrics.compute_f1("", "") == 1.0
    assert metrics.compute_exact("", "") == 1


def test_v2_scores_with_unanswerable_questions_and_has_ans_split():
    dataset = _dataset([
        ("has1", ["the Nile"]), ("has2", ["Paris", "in Paris"]), ("none1", []),
        ("none2", []), ("articles_only", ["the"]),  # normalises to "": unanswerable
    ])
    predictions = {"has1": "Nile river", "has2": "", "none1": "", "none2": "Rome",
                   "articles_only": ""}
    result = metrics.evaluate_v2(dataset, predictions)
    # has1: EM 0, F1 = 2·(1/2·1)/(1/2+1) = 2/3; has2: 0/0; none1: 1/1; none2: 0/0; articles: 1/1.
    assert result["total"] == 5
    assert result["exact"] == pytest.approx(100 * 2 / 5)
    assert result["f1"] == pytest.approx(100 * (2 / 3 + 2) / 5)
    assert result["HasAns_total"] == 3 and result["NoAns_total"] == 2
    assert result["HasAns_f1"] == pytest.approx(100 * (2 / 3 + 1) / 3)
    assert result["NoAns_exact"] == pytest.approx(50.0)
    assert "best_f1" not in result


def test_v2_no_answer_threshold_and_best_threshold_search():
    dataset = _dataset([("A", ["alpha"]), ("B", ["beta gamma"]), ("C", []), ("D", [])])
    predictions = {"A": "alpha", "B": "beta", "C": "x", "D": ""}
    na_probs = {"A": 0.1, "B": 0.7, "C": 0.9, "D": 0.2}
    # B: P 1, R 1/2 → F1 2/3. Threshold 0.5: B and C are forced to "" (B → 0, C → 1).
    result = metrics.evaluate_v2(dataset, predictions, na_probs, na_prob_thresh=0.5)
    assert result["f1"] == pytest.approx(100 * (1 + 0 + 1 + 1) / 4)
    # Hand walk by increasing na_prob from "all null" = 2 (C, D right): A +1 → 3 (t 0.1),
    # D +0, B +2/3 → 3.667 (t 0.7), C −1. Best F1 3.667/4 at 0.7; best exact 3/4 at 0.1.
    assert result["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
    assert result["best_f1_thresh"] == 0.7
    assert result["best_exact"] == pytest.approx(75.0)
    assert result["best_exact_thresh"] == 0.1
    # Re-scoring at the found threshold reproduces the best score.
    at_best = metrics.evaluate_v2(dataset, predictions, na_probs, na_prob_thresh=0.7)
    assert at_best["f1"] == pytest.approx(result["best_f1"])


def test_best_threshold_when_answering_nothing_is_best():
    qid_to_has_ans = {"A": False, "B": False}
    predictions, scores, na_probs = {"A": "x", "B": "y"}, {"A": 0.0, "B": 0.0}, {"A": 3.0,
                                                                               "B": -2.0}
    # The official default 0.0 would answer B (na −2 ≤ 0); logit callers pass −inf.
    assert metrics.find_best_thresh(predictions, scores, na_probs, qid_to_has_ans) == (100.0,
                                                                                          0.0)
    assert metrics.find_best_thresh(predictions, scores, na_probs, qid_to_has_ans,
                                       initial_thresh=float("-inf")) == (100.0, float("-inf"))


def test_scoring_nothing_is_a_clear_error():
    with pytest.raises(ValueError, match="no questions"):
        metrics.evaluate_v1([], {})
    with pytest.raises(ValueError, match="no predicted question"):
        metrics.evaluate_v2(_dataset([("A", ["a"])]), {})
