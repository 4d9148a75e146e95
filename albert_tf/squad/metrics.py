"""The official SQuAD v1.1 and v2.0 evaluation logic, written from the published scripts.

Both normalise answers the same way (lowercase, drop ASCII punctuation, drop the articles
a/an/the as words, collapse whitespace) and take the best score over the gold answers. They
differ in corner cases, kept here as published: v1.1's F1 is 0 when nothing overlaps, even for
two empty strings; v2.0 treats a question whose gold answers all normalise to "" as
unanswerable (gold [""]) and scores an empty prediction against an empty gold as 1.
Scores are percentages.
"""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lowercase, remove punctuation, articles and extra whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _overlap_f1(prediction_tokens, gold_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------------------------
# v1.1


def f1_score_v1(prediction, ground_truth):
    return _overlap_f1(normalize_answer(prediction).split(),
                       normalize_answer(ground_truth).split())


def exact_match_score_v1(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def evaluate_v1(dataset, predictions):
    """{"exact_match", "f1"} over every question of `dataset` (the SQuAD `data` list).

    A question missing from `predictions` counts as 0 (the official script prints a message).
    """
    total = exact = f1 = 0.0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                golds = [answer["text"] for answer in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact += max(exact_match_score_v1(prediction, g) for g in golds)
                f1 += max(f1_score_v1(prediction, g) for g in golds)
    if not total:
        raise ValueError("the SQuAD data set has no questions to score")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


# --------------------------------------------------------------------------------------------
# v2.0


def _tokens_v2(text):
    return normalize_answer(text).split() if text else []


def compute_exact(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def compute_f1(gold, prediction):
    gold_tokens, prediction_tokens = _tokens_v2(gold), _tokens_v2(prediction)
    if not gold_tokens or not prediction_tokens:
        return float(gold_tokens == prediction_tokens)
    return _overlap_f1(prediction_tokens, gold_tokens)


def make_qid_to_has_ans(dataset):
    return {qa["id"]: bool(qa["answers"])
            for article in dataset for p in article["paragraphs"] for qa in p["qas"]}


def get_raw_scores(dataset, predictions):
    """Per question id: best exact and F1 over the gold answers; missing ids are left out."""
    exact_scores, f1_scores = {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qid = qa["id"]
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
                golds = golds or [""]
                if qid not in predictions:
                    continue
                prediction = predictions[qid]
                exact_scores[qid] = max(compute_exact(g, prediction) for g in golds)
                f1_scores[qid] = max(compute_f1(g, prediction) for g in golds)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, threshold):
    """A question whose no-answer score exceeds `threshold` is scored as answered "" ."""
    return {qid: float(not qid_to_has_ans[qid]) if na_probs[qid] > threshold else score
            for qid, score in scores.items()}


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    qids = list(exact_scores) if qid_list is None else qid_list
    total = len(qids)
    if not total:
        raise ValueError("no predicted question to score")
    return collections.OrderedDict([
        ("exact", 100.0 * sum(exact_scores[q] for q in qids) / total),
        ("f1", 100.0 * sum(f1_scores[q] for q in qids) / total),
        ("total", total),
    ])


def find_best_thresh(predictions, scores, na_probs, qid_to_has_ans, initial_thresh=0.0):
    """(best score in %, threshold): predicting "" for every question with na_prob > threshold.

    Walks the questions by increasing no-answer score, switching each from "" to its
    prediction; the threshold is the no-answer score of the last question switched. When
    answering nothing is best, the official script returns 0.0 (right for probabilities);
    callers whose scores are logits pass `initial_thresh=-inf`.
    """
    current = best = sum(1 for q in qid_to_has_ans if not qid_to_has_ans[q])
    best_thresh = initial_thresh
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            current += scores[qid]
        else:
            current += -1 if predictions[qid] else 0
        if current > best:
            best, best_thresh = current, na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """The official v2.0 result: exact, f1, total, HasAns_*, NoAns_*, and with `na_probs` also
    best_exact, best_exact_thresh, best_f1, best_f1_thresh.

    Without `na_probs` every no-answer score is 0, so the threshold changes nothing: the
    predictions are scored as given ("" = no answer).
    """
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    has_ans = [q for q, v in qid_to_has_ans.items() if v]
    no_ans = [q for q, v in qid_to_has_ans.items() if not v]
    probs = na_probs if na_probs is not None else {q: 0.0 for q in predictions}
    exact_raw, f1_raw = get_raw_scores(dataset, predictions)
    exact = apply_no_ans_threshold(exact_raw, probs, qid_to_has_ans, na_prob_thresh)
    f1 = apply_no_ans_threshold(f1_raw, probs, qid_to_has_ans, na_prob_thresh)
    result = make_eval_dict(exact, f1)
    for prefix, qids in (("HasAns", has_ans), ("NoAns", no_ans)):
        qids = [q for q in qids if q in exact]
        if qids:
            for key, value in make_eval_dict(exact, f1, qids).items():
                result[f"{prefix}_{key}"] = value
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = find_best_thresh(
            predictions, exact_raw, na_probs, qid_to_has_ans)
        result["best_f1"], result["best_f1_thresh"] = find_best_thresh(
            predictions, f1_raw, na_probs, qid_to_has_ans)
    return result
