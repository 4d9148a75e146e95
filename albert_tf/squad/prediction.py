"""Post-processes and scores a SQuAD model's raw outputs on a predict set, writing its files.

The model runs in the one whole-set pass (`training.prediction.aggregate`, with
`squad.task.SquadTask` collecting the raw outputs); this module turns them into answers.

v1: the official v1.1 `exact_match` and `f1`.

v2 (a fix of the original): the original tuned the no-answer threshold on the evaluated set itself
and first scored logits against the official script's probability cut of 1.0. Here the
threshold on `null_odds` (min `cls_logits`, a logit) is one of
  * `fixed_threshold` (`--null_score_diff_threshold`), or
  * the best-F1 threshold on a separate labelled set (`--threshold_predict_file`), or
  * by default the best-F1 threshold on the predict set itself; the results then say so
    (`null_threshold_chosen_on = predict_file (tuned on the evaluated set, not held out)`).
A chosen threshold is moved half-way to the next higher no-answer score (`midpoint_threshold`):
the official search returns a score some question sits exactly on.
The predictions at that threshold ("" = no answer) are scored as they are with the official
v2.0 logic: `exact`, `f1`, `total`, `HasAns_*`, `NoAns_*`.
"""

import numpy as np
from absl import logging

from albert_tf.squad import metrics, postprocess

RAW_OUTPUTS = ("start_logits", "end_logits", "start_top_log_probs", "start_top_index",
               "end_top_log_probs", "end_top_index", "cls_logits")
TUNED_ON_PREDICT_SET = "predict_file (tuned on the evaluated set, not held out)"


class SquadEvaluator:
    """`score(raw_results, output_dir)` → the official results of a labelled predict set,
    `predict_unlabelled(raw_results, output_dir)` the predictions of one without answers; both
    write the prediction files. `raw_results(predict set)` → its RawResults (`raw_results_of`
    the raw outputs `squad.task.SquadTask` aggregated)."""

    def __init__(self, predict_set, version_2_with_negative, n_best_size=20,
                 max_answer_length=30, start_n_top=5, end_n_top=5, threshold_set=None,
                 fixed_threshold=None):
        self.predict_set, self.threshold_set = predict_set, threshold_set
        self.version_2 = version_2_with_negative
        self.n_best_size, self.max_answer_length = n_best_size, max_answer_length
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        self.fixed_threshold = fixed_threshold

    def raw_results_of(self, outputs):
        """RawResultV1/V2 of each row of raw output arrays (`RAW_OUTPUTS`, `unique_ids`)."""
        results = []
        for i, unique_id in enumerate(outputs["unique_ids"]):
            if self.version_2:
                results.append(postprocess.RawResultV2(
                    int(unique_id), outputs["start_top_log_probs"][i],
                    outputs["start_top_index"][i], outputs["end_top_log_probs"][i],
                    outputs["end_top_index"][i], float(outputs["cls_logits"][i])))
            else:
                results.append(postprocess.RawResultV1(
                    int(unique_id), outputs["start_logits"][i], outputs["end_logits"][i]))
        return results

    def _predict_v2(self, raw_results, predict_set):
        return postprocess.predict_v2(
            predict_set.examples, predict_set.features, raw_results(predict_set),
            self.n_best_size, self.max_answer_length, self.start_n_top, self.end_n_top)

    @property
    def is_labelled(self):
        """Whether the predict file has gold answers to score against (a test set has none:
        the original wrote its predictions and scored nothing)."""
        return has_answers(self.predict_set.dataset)

    def predict_unlabelled(self, raw_results, output_dir):
        """Writes the prediction files of an unlabelled predict set; returns its threshold
        (v2) or None. v2 takes --null_score_diff_threshold, else the best threshold on
        --threshold_predict_file, else 0.0 (the original's default)."""
        if not self.version_2:
            self._write_v1(raw_results, output_dir)
            return None
        best_texts, nbest, null_odds = self._predict_v2(raw_results, self.predict_set)
        if self.fixed_threshold is not None or self.threshold_set is not None:
            threshold, _ = self._choose_threshold(raw_results, best_texts, null_odds)
        else:
            threshold = 0.0
            logging.warning("%s has no answers to tune the no-answer threshold on and no "
                            "--threshold_predict_file or --null_score_diff_threshold was given: "
                            "using 0.0", self.predict_set.input_file)
        self._write_v2(output_dir, best_texts, nbest, null_odds, threshold)
        return threshold

    def score(self, raw_results, output_dir):
        """The official scores of the predict set, from `raw_results(predict set)` → its
        RawResults (the threshold set's too, when there is one); writes the prediction files."""
        if not self.version_2:
            predictions = self._write_v1(raw_results, output_dir)
            return dict(metrics.evaluate_v1(self.predict_set.dataset, predictions))
        best_texts, nbest, null_odds = self._predict_v2(raw_results, self.predict_set)
        threshold, source = self._choose_threshold(raw_results, best_texts, null_odds)
        predictions = self._write_v2(output_dir, best_texts, nbest, null_odds, threshold)
        results = dict(metrics.evaluate_v2(self.predict_set.dataset, predictions))
        results["null_score_diff_threshold"] = threshold
        results["null_threshold_chosen_on"] = source
        return results

    def _write_v1(self, raw_results, output_dir):
        predictions, nbest = postprocess.predict_v1(
            self.predict_set.examples, self.predict_set.features,
            raw_results(self.predict_set), self.n_best_size, self.max_answer_length)
        postprocess.write_prediction_files(output_dir, predictions, nbest)
        return predictions

    @staticmethod
    def _write_v2(output_dir, best_texts, nbest, null_odds, threshold):
        predictions = postprocess.apply_null_threshold(best_texts, null_odds, threshold)
        postprocess.write_prediction_files(output_dir, predictions, nbest, null_odds)
        return predictions

    def _choose_threshold(self, raw_results, best_texts, null_odds):
        """(threshold, where it came from); see the module docstring."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold, "--null_score_diff_threshold"
        if self.threshold_set is not None:
            labelled = self.threshold_set
            best_texts, _, null_odds = self._predict_v2(raw_results, labelled)
            source = f"threshold_predict_file {labelled.input_file}"
        else:
            labelled, source = self.predict_set, TUNED_ON_PREDICT_SET
        _, f1_raw = metrics.get_raw_scores(labelled.dataset, best_texts)
        _, threshold = metrics.find_best_thresh(
            best_texts, f1_raw, null_odds, metrics.make_qid_to_has_ans(labelled.dataset),
            initial_thresh=float("-inf"))
        threshold = midpoint_threshold(threshold, null_odds.values())
        logging.info("No-answer threshold %.6g chosen on %s", threshold, source)
        return threshold, source


def has_answers(dataset):
    """Any question of a SQuAD `data` list with an `answers` list or an `is_impossible` flag."""
    return any("answers" in qa or "is_impossible" in qa
               for article in dataset for paragraph in article.get("paragraphs", [])
               for qa in paragraph.get("qas", []))


def midpoint_threshold(threshold, null_scores):
    """Moves the official threshold (the no-answer score of the last question it answers, so a
    question sits exactly on it) half-way to the next higher score: the same decisions on the
    tuning set, with a margin on both sides for other sets and float rounding."""
    above = [s for s in null_scores if s > threshold]
    if not above or not np.isfinite(threshold):
        return threshold
    return (threshold + min(above)) / 2.0
