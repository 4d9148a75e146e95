"""The verdict rule of the study and the demo: a finding is judged on its difference and that
difference's standard error, never on the sign of two means.

REPRODUCED only when the difference exceeds two standard errors in the paper's direction, NOT
REPRODUCED only when it does so the other way, "not resolved" otherwise (also when there is no
spread to judge by: a single seed). Downstream comparisons are paired by seed (the same seed,
hence the same subset and data order, for both arms); held-out accuracies of one checkpoint get
the binomial standard error of the pairs they were measured on.
"""

import math

REPRODUCED = "REPRODUCED"
NOT_REPRODUCED = "NOT REPRODUCED"
NOT_RESOLVED = "not resolved"
VERDICT_WORDS = (REPRODUCED, NOT_REPRODUCED, NOT_RESOLVED)


def mean_std(values):
    """Mean and sample standard deviation (0 for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


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


def verdict(difference, se):
    """The rule on a difference oriented so that the paper's direction is positive."""
    if se is None:
        return NOT_RESOLVED
    if difference > 2 * se:
        return REPRODUCED
    if difference < -2 * se:
        return NOT_REPRODUCED
    return NOT_RESOLVED


def points(difference, se):
    """`+1.2 ± 0.4` in points (`± n/a` without a standard error)."""
    return f"{100 * difference:+.1f} ± {'n/a' if se is None else f'{100 * se:.1f}'}"
