"""Data efficiency: pretrained against random initialisation on paired training subsets.

Each seed draws one subset of the training sentences, used by both arms (so the comparison is
paired by seed); the summary holds both arms' per-seed scores, the paired gain with its
standard error, how many seeds gained, and how many runs collapsed to one class.
"""

import os
import random

from albert_tf.demo import verdicts
from albert_tf.files import io_utils

# A run "collapsed" when its dev accuracy is, to half a point, the rate of the majority label
# or of the other one: it answers one class (nearly) always. Binary labels.
COLLAPSE_TOLERANCE = 0.005


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


def collapsed(scores, majority_rate):
    """How many of `scores` sit at the rate of one class: the majority label's, or the
    minority's (1 - majority_rate)."""
    return sum(min(abs(score - majority_rate), abs(score - (1 - majority_rate))) <= COLLAPSE_TOLERANCE
               for score in scores)


def summary(pretrained, random_init, majority_rate):
    """The comparison of one training-set size (scores in seed order, the same seeds)."""
    comparison = verdicts.paired(pretrained, random_init)
    return {"pretrained": pretrained, "random_init": random_init,
            "gain": round(comparison["gain"], 4),
            "gain_se": None if comparison["se"] is None else round(comparison["se"], 4),
            "positive_seeds": comparison["positive"], "seeds": comparison["n"],
            "collapsed": {"pretrained": collapsed(pretrained, majority_rate),
                          "random_init": collapsed(random_init, majority_rate)},
            "majority_rate": round(majority_rate, 4)}


def describe(size, cell):
    """One line for the printed summary."""
    se = cell["gain_se"]
    return (f"{size}: pretrained {100 * verdicts.mean_std(cell['pretrained'])[0]:.1f}, random init "
            f"{100 * verdicts.mean_std(cell['random_init'])[0]:.1f}, paired gain "
            f"{verdicts.points(cell['gain'], se)} points over {cell['seeds']} seeds "
            f"({cell['positive_seeds']} positive); collapsed to one class: pretrained "
            f"{cell['collapsed']['pretrained']}, random init {cell['collapsed']['random_init']}")
