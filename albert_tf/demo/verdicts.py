"""The verdict rule of the study and the demo: a finding is judged on its difference and that
difference's standard error, never on the sign of two means.

The rule: REPRODUCED only when the difference lies beyond its two-sided 95% interval in the
paper's direction, NOT REPRODUCED only when it does so the other way, "not resolved" otherwise.
The interval is the t distribution's at the number of seeds less one (t = 4.30 at 3 seeds, 2.78
at 5: "two standard errors" would be a one-sided p of about 0.09 at 3 seeds), and the normal
one (1.96) for held-out accuracies, whose standard error is the binomial one of the pairs
measured. Without a spread to judge by (one seed, or identical per-seed differences: a standard
error of 0) the verdict is "not resolved". "not measurable" is for a finding the study's arms
cannot measure (no arm of the same architecture to compare with, a head that learnt nothing).

Downstream comparisons are paired by seed (the same seed, hence the same subset and data
order, for both arms). A run that collapsed (its accuracy is that of always answering one
class: see `collapsed`) is no measurement of the arm: its seed's pair leaves the mean and the
standard error and is counted beside them, and a verdict that would differ with collapses
counted says so.
"""

import math

from scipy import stats

REPRODUCED = "REPRODUCED"
NOT_REPRODUCED = "NOT REPRODUCED"
NOT_RESOLVED = "not resolved"
NOT_MEASURABLE = "not measurable"
VERDICT_WORDS = (REPRODUCED, NOT_REPRODUCED, NOT_RESOLVED, NOT_MEASURABLE)
CONFIDENCE = 0.95  # two-sided

# A run "collapsed" when its accuracy is, to half a point, the rate of always answering one
# class: the majority label's or, for two labels, the other one's. Half a point is 5 of the
# demo's 1,021 dev sentences: a classifier that answers anything else on more than a handful of
# them lands outside it unless its right and wrong answers cancel exactly.
COLLAPSE_TOLERANCE = 0.005


def mean_std(values):
    """Mean and sample standard deviation (0 for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def critical_value(seeds=None):
    """The multiple of the standard error a difference must exceed: the t distribution's
    two-sided 95% point at `seeds` - 1 degrees of freedom, or the normal one without `seeds`."""
    tail = (1 + CONFIDENCE) / 2
    return float(stats.norm.ppf(tail) if seeds is None else stats.t.ppf(tail, seeds - 1))


def one_class_rates(majority_rate, labels=2):
    """The accuracies of always answering one class that can be known from the majority rate:
    the majority's, and for two labels the other one's."""
    return (majority_rate, 1 - majority_rate) if labels == 2 else (majority_rate,)


def collapsed(score, rates):
    """Whether an accuracy sits, within COLLAPSE_TOLERANCE, at one of the one-class `rates`."""
    return any(abs(score - rate) <= COLLAPSE_TOLERANCE for rate in rates)


def paired(better, worse):
    """`better` − `worse` paired by seed: {"differences", "gain", "se", "positive", "n"}; the
    standard error is the differences' sample standard deviation over √n (None for one seed)."""
    if len(better) != len(worse) or not better:
        raise ValueError(f"paired comparison needs the same seeds on both arms: {len(better)} "
                         f"against {len(worse)} scores")
    differences = [b - w for b, w in zip(better, worse)]
    gain, std = mean_std(differences)
    se = std / math.sqrt(len(differences)) if len(differences) > 1 else None
    return {"differences": differences, "gain": gain, "se": se, "n": len(differences),
            "positive": sum(d > 0 for d in differences)}


def binomial_se(accuracy, count):
    """The standard error of an accuracy measured on `count` independent examples."""
    return math.sqrt(max(accuracy * (1 - accuracy), 0.0) / count)


def verdict(difference, se, seeds=None):
    """The rule on a difference oriented so that the paper's direction is positive; `seeds`:
    how many paired seeds the standard error comes from (None: a binomial error)."""
    if se is None or se <= 0 or (seeds is not None and seeds < 2):
        return NOT_RESOLVED
    margin = critical_value(seeds) * se
    if difference > margin:
        return REPRODUCED
    if difference < -margin:
        return NOT_REPRODUCED
    return NOT_RESOLVED


def exact_verdict(difference):
    """For quantities without error (parameter counts)."""
    return REPRODUCED if difference > 0 else NOT_REPRODUCED


def compare(better, worse, rates=()):
    """`better` against `worse` paired by seed with collapses left out: the pairs where either
    arm collapsed (its accuracy at one of the one-class `rates`) are dropped and counted.
    Returns the paired comparison of the pairs kept (gain, se, n, positive; gain None when
    every pair is dropped), its verdict, `collapsed` {"better", "worse"} run counts,
    `seeds` (all of them), and `with_collapses`: the comparison and verdict had the collapsed
    runs counted, with `verdict_changes` when the two verdicts differ."""
    if len(better) != len(worse) or not better:
        raise ValueError(f"paired comparison needs the same seeds on both arms: {len(better)} "
                         f"against {len(worse)} scores")
    kept = [(b, w) for b, w in zip(better, worse) if not (collapsed(b, rates) or collapsed(w, rates))]
    everything = paired(better, worse)
    counted_verdict = verdict(everything["gain"], everything["se"], everything["n"])
    if kept:
        result = paired([b for b, _ in kept], [w for _, w in kept])
        result["verdict"] = verdict(result["gain"], result["se"], result["n"])
    else:
        result = {"differences": [], "gain": None, "se": None, "n": 0, "positive": 0,
                  "verdict": NOT_RESOLVED}
    result.update(seeds=len(better),
                  collapsed={"better": sum(collapsed(b, rates) for b in better),
                             "worse": sum(collapsed(w, rates) for w in worse)},
                  with_collapses={"gain": everything["gain"], "se": everything["se"],
                                  "verdict": counted_verdict},
                  verdict_changes=counted_verdict != result["verdict"])
    return result


def kept_scores(scores, rates=()):
    """The scores of the runs that did not collapse."""
    return [score for score in scores if not collapsed(score, rates)]


def points(difference, se):
    """`+1.2 ± 0.4` in points (`± n/a` without a standard error, `n/a` without a difference)."""
    if difference is None:
        return "n/a"
    return f"{100 * difference:+.1f} ± {'n/a' if se is None else f'{100 * se:.1f}'}"


def describe(comparison, with_verdicts=True):
    """`paired gain +1.2 ± 0.4 points over 3 of 3 seeds, 2 positive`, with the collapsed runs
    and what counting them would give (and, `with_verdicts`, the verdict that would read)."""
    text = (f"paired gain {points(comparison['gain'], comparison['se'])} points over "
            f"{comparison['n']} of {comparison['seeds']} seeds, {comparison['positive']} positive")
    drops = comparison["collapsed"]
    if drops["better"] or drops["worse"]:
        counted = comparison["with_collapses"]
        text += (f"; left out: collapsed runs {drops['better']} / {drops['worse']} (this arm / "
                 f"the other), with them {points(counted['gain'], counted['se'])}")
        if comparison["verdict_changes"] and with_verdicts:
            text += f", which would read {counted['verdict']}"
    return text
