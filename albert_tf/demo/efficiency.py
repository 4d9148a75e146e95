"""Data efficiency: pretrained against random initialisation on paired training subsets.

Each seed draws one subset of the training sentences, used by both arms (so the comparison is
paired by seed); the summary holds both arms' per-seed scores, the paired gain with its
standard error over the seeds where neither arm collapsed to one class, how many seeds gained,
how many runs collapsed, and the verdict (albert_tf.demo.verdicts).
"""

import os
import random

from albert_tf.demo import verdicts
from albert_tf.files import io_utils

def _read_tsv(path):
    with open(path) as reader:
        lines = reader.read().splitlines()
    if not lines:
        raise ValueError(f"{path}: empty, expected a header line")
    return lines[0], [line for line in lines[1:] if line.strip()]


def write_subset(task_dir, out_dir, size, seed, dev_rows=None):
    """An SST-2 directory in `out_dir` whose train.tsv holds `size` training rows of `task_dir`
    drawn with `seed` (all of them, in their order, when `size` is None), and whose dev.tsv is
    `task_dir`'s, or, with `dev_rows`, that many rows of the training set kept out of the draw
    (a selection slice: hyperparameters are never chosen on dev). Returns out_dir."""
    header, rows = _read_tsv(os.path.join(task_dir, "train.tsv"))
    if dev_rows:
        rows, dev = rows[:-dev_rows], rows[-dev_rows:]
        dev_text = "\n".join([header] + dev) + "\n"
    else:
        with open(os.path.join(task_dir, "dev.tsv")) as reader:
            dev_text = reader.read()
    if size is not None:
        if size > len(rows):
            raise ValueError(f"{task_dir}/train.tsv: {len(rows)} rows, fewer than the {size} asked")
        rows = random.Random(seed).sample(rows, size)
    io_utils.atomic_write_text(os.path.join(out_dir, "train.tsv"), "\n".join([header] + rows) + "\n")
    io_utils.atomic_write_text(os.path.join(out_dir, "dev.tsv"), dev_text)
    return out_dir


def summary(pretrained, random_init, majority_rate):
    """The comparison of one training-set size (scores in seed order, the same seeds): the
    paired gain over the seeds where neither arm collapsed (verdicts.compare), the collapsed
    runs counted beside it, and the verdict."""
    comparison = verdicts.compare(pretrained, random_init, verdicts.one_class_rates(majority_rate))
    counted = comparison["with_collapses"]
    return {"pretrained": pretrained, "random_init": random_init,
            "gain": _rounded(comparison["gain"]), "gain_se": _rounded(comparison["se"]),
            "positive_seeds": comparison["positive"], "seeds": comparison["seeds"],
            "kept_seeds": comparison["n"],
            "collapsed": {"pretrained": comparison["collapsed"]["better"],
                          "random_init": comparison["collapsed"]["worse"]},
            "verdict": comparison["verdict"],
            "with_collapses": {"gain": _rounded(counted["gain"]), "gain_se": _rounded(counted["se"]),
                               "verdict": counted["verdict"]},
            "majority_rate": round(majority_rate, 4)}


def _rounded(value):
    return None if value is None else round(value, 4)


def arm_mean(scores, majority_rate):
    """The mean of an arm's runs that did not collapse (None when all did)."""
    kept = verdicts.kept_scores(scores, verdicts.one_class_rates(majority_rate))
    return verdicts.mean_std(kept)[0] if kept else None


def describe(size, cell, with_verdicts=True):
    """One line for the printed summary (without verdict words unless `with_verdicts`)."""
    means = [arm_mean(cell[arm], cell["majority_rate"]) for arm in ("pretrained", "random_init")]
    pretrained, random_init = ("n/a" if mean is None else f"{100 * mean:.1f}" for mean in means)
    counted = cell["with_collapses"]
    line = (f"{size}: pretrained {pretrained}, random init {random_init}, paired gain "
            f"{verdicts.points(cell['gain'], cell['gain_se'])} points over {cell['kept_seeds']} of "
            f"{cell['seeds']} seeds ({cell['positive_seeds']} positive)"
            + (f": {cell['verdict']}" if with_verdicts else "") + "; "
            f"collapsed to one class (left out): pretrained {cell['collapsed']['pretrained']}, "
            f"random init {cell['collapsed']['random_init']}")
    if counted["gain"] != cell["gain"]:
        line += f"; with them counted {verdicts.points(counted['gain'], counted['gain_se'])}"
        if with_verdicts and counted["verdict"] != cell["verdict"]:
            line += f", which would read {counted['verdict']}"
    return line
