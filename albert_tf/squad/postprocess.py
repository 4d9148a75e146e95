"""Model outputs → answer texts, n-best lists and no-answer scores; the three output files.

v1 (the original's): per window, the n_best highest start logits × the n_best highest end logits; a pair
is kept if both ends lie in the window's paragraph pieces, the start piece has its maximum
context in this window, end ≥ start and the span has ≤ max_answer_length pieces. Score =
start + end logit; pairs from all windows of a question are sorted, deduplicated on the final
text (the original characters under the pieces, stripped) and cut to n_best; `probability` is
the softmax of the scores. No valid pair → "empty", as the original.

v2: the same filters over the head's start_n_top × end_n_top beam (log-probabilities), plus
start ≥ the window's first paragraph piece. The no-answer score of a question is the minimum
`cls_logits` over its windows (higher = more likely unanswerable). No valid pair → "" with
−1e6 log-probs. The best non-null text is the answer unless the no-answer score exceeds the
null threshold (the official script's convention: "" when na_prob > threshold).
"""

import collections
import dataclasses
import json
import math
import os

import numpy as np

from albert_tf.files import io_utils

V1_EMPTY_TEXT = "empty"
V2_EMPTY_LOG_PROB = -1e6
NO_FEATURE_NULL_SCORE = 1e6  # A question with no window (alignment MISMATCH) is unanswerable.


@dataclasses.dataclass
class RawResultV1:
    unique_id: int
    start_logits: np.ndarray  # [S]
    end_logits: np.ndarray  # [S]


@dataclasses.dataclass
class RawResultV2:
    unique_id: int
    start_top_log_probs: np.ndarray  # [start_n_top]
    start_top_index: np.ndarray  # [start_n_top]
    end_top_log_probs: np.ndarray  # [start_n_top * end_n_top]
    end_top_index: np.ndarray  # [start_n_top * end_n_top]
    cls_logits: float


@dataclasses.dataclass
class _Candidate:
    feature: object
    start: int  # Piece index within the window's paragraph pieces.
    end: int
    start_score: float
    end_score: float


def compute_softmax(scores):
    """Softmax of a python list, stable; [] for []."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _best_indexes(logits, n_best_size):
    return [int(i) for i in np.argsort(-np.asarray(logits), kind="stable")[:n_best_size]]


def _valid_span(feature, start_index, end_index, max_answer_length):
    """Positions in the sequence → True if they delimit an allowed paragraph span."""
    start, end = start_index - feature.doc_offset, end_index - feature.doc_offset
    return (0 <= start < len(feature.tok_start_to_orig_index)
            and 0 <= end < len(feature.tok_end_to_orig_index)
            and feature.token_is_max_context.get(start_index, False)
            and end_index >= start_index
            and end_index - start_index + 1 <= max_answer_length)


def _group_features(features):
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    return by_example


def _nbest(example, candidates, n_best_size):
    """Sorted, text-deduplicated, at most n_best_size (text, candidate) pairs."""
    candidates.sort(key=lambda c: c.start_score + c.end_score, reverse=True)
    seen, nbest = set(), []
    for candidate in candidates:
        if len(nbest) >= n_best_size:
            break
        feature = candidate.feature
        first_char = feature.tok_start_to_orig_index[candidate.start]
        last_char = feature.tok_end_to_orig_index[candidate.end]
        text = example.paragraph_text[first_char:last_char + 1].strip()
        if text in seen:
            continue
        seen.add(text)
        nbest.append((text, candidate.start_score, candidate.end_score))
    return nbest


def _nbest_json(nbest, start_key, end_key):
    probabilities = compute_softmax([s + e for _, s, e in nbest])
    return [collections.OrderedDict([("text", text), ("probability", p),
                                     (start_key, float(s)), (end_key, float(e))])
            for (text, s, e), p in zip(nbest, probabilities)]


def predict_v1(examples, features, results, n_best_size, max_answer_length):
    """Returns (predictions {qas_id: text}, nbest {qas_id: [entries]}).

    n-best entries carry `start_logit`/`end_logit`: the values are logits (the original wrote
    them under `start_log_prob`/`end_log_prob`, a misnomer).
    """
    result_by_id = {r.unique_id: r for r in results}
    by_example = _group_features(features)
    predictions, all_nbest = collections.OrderedDict(), collections.OrderedDict()
    for example_index, example in enumerate(examples):
        candidates = []
        for feature in by_example[example_index]:
            result = result_by_id[feature.unique_id]
            for start_index in _best_indexes(result.start_logits, n_best_size):
                for end_index in _best_indexes(result.end_logits, n_best_size):
                    if _valid_span(feature, start_index, end_index, max_answer_length):
                        candidates.append(_Candidate(
                            feature, start_index - feature.doc_offset,
                            end_index - feature.doc_offset,
                            float(result.start_logits[start_index]),
                            float(result.end_logits[end_index])))
        nbest = _nbest(example, candidates, n_best_size) or [(V1_EMPTY_TEXT, 0.0, 0.0)]
        all_nbest[example.qas_id] = _nbest_json(nbest, "start_logit", "end_logit")
        predictions[example.qas_id] = nbest[0][0]
    return predictions, all_nbest


def predict_v2(examples, features, results, n_best_size, max_answer_length, start_n_top,
               end_n_top):
    """Returns (best non-null text, nbest, null_odds), each {qas_id: ...}.

    null_odds is the minimum `cls_logits` over the question's windows. Apply a threshold with
    `apply_null_threshold` to get the predictions.
    """
    result_by_id = {r.unique_id: r for r in results}
    by_example = _group_features(features)
    best_texts, all_nbest = collections.OrderedDict(), collections.OrderedDict()
    null_odds = collections.OrderedDict()
    for example_index, example in enumerate(examples):
        candidates, null_score = [], NO_FEATURE_NULL_SCORE
        for feature in by_example[example_index]:
            result = result_by_id[feature.unique_id]
            null_score = min(null_score, float(result.cls_logits))
            for i in range(start_n_top):
                start_index = int(result.start_top_index[i])
                for j in range(end_n_top):
                    end_index = int(result.end_top_index[i * end_n_top + j])
                    if _valid_span(feature, start_index, end_index, max_answer_length):
                        candidates.append(_Candidate(
                            feature, start_index - feature.doc_offset,
                            end_index - feature.doc_offset,
                            float(result.start_top_log_probs[i]),
                            float(result.end_top_log_probs[i * end_n_top + j])))
        nbest = (_nbest(example, candidates, n_best_size)
                 or [("", V2_EMPTY_LOG_PROB, V2_EMPTY_LOG_PROB)])
        all_nbest[example.qas_id] = _nbest_json(nbest, "start_log_prob", "end_log_prob")
        best_texts[example.qas_id] = nbest[0][0]
        null_odds[example.qas_id] = null_score
    return best_texts, all_nbest, null_odds


def apply_null_threshold(best_texts, null_odds, threshold):
    """"" where the no-answer score exceeds `threshold` (None: never), else the best text."""
    return collections.OrderedDict(
        (qid, "" if threshold is not None and null_odds[qid] > threshold else text)
        for qid, text in best_texts.items())


def write_json(path, value):
    """Atomic, in the original's layout: json.dumps(indent=4) plus a newline."""
    io_utils.atomic_write_text(path, json.dumps(value, indent=4) + "\n")


def write_prediction_files(output_dir, predictions, nbest, null_odds=None):
    """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json; returns paths."""
    paths = {"predictions": os.path.join(output_dir, "predictions.json"),
             "nbest": os.path.join(output_dir, "nbest_predictions.json")}
    write_json(paths["predictions"], predictions)
    write_json(paths["nbest"], nbest)
    if null_odds is not None:
        paths["null_odds"] = os.path.join(output_dir, "null_odds.json")
        write_json(paths["null_odds"], null_odds)
    return paths
