"""Real labelled data in GLUE layouts: the movie-review sentences as SST-2 and as STS-B.

`data/movie_reviews.tsv` (`id<TAB>score<TAB>text`, CRLF or LF, score = the mean rating of at
least 20 people on −4…+4) comes from the Rotten Tomatoes snippets that SST was built from.

* `write_sst2_task`: label 1 if score > 0.5, 0 if score < −0.5; the neutral sentences in
  between are dropped (10,043 of 10,605 remain, about half positive).
* `write_stsb_task`: there are no sentence pairs, so each row holds the sentence as
  `sentence1` and an empty `sentence2`; the processor then builds the single-sequence layout
  `[CLS] sentence [SEP]`. The regression target is the score rescaled linearly from [−4, 4]
  to STS-B's [0, 5]: `(score + 4) × 5 / 8`. Every sentence is kept.

The split is deterministic and stable per sentence: CRC-32 of the review id modulo 10 is 0 for
dev, 1 for test, anything else for train (about 80/10/10). The source lists all positive
sentences before the negative ones, which a shuffle buffer of 100 (the original's) cannot mix,
so the rows of every split are written in a fixed pseudo-random order (`_row_order`). The test
files carry the review id as `index`, so predictions can be matched to the source
(`split_of`, `read_reviews`).

Both writers are idempotent: each file is rendered in memory, left alone if it already holds
exactly that text, and otherwise written atomically (a temporary name, then a rename).
"""

import dataclasses
import hashlib
import io
import os
import zlib

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import input_files, io_utils

POSITIVE_ABOVE = 0.5
NEGATIVE_BELOW = -0.5
SCORE_RANGE = (-4.0, 4.0)
STSB_RANGE = (0.0, 5.0)


class MovieReviewsError(errors.UserInputError):
    """A malformed line of movie_reviews.tsv; the message names the file and line."""


@dataclasses.dataclass
class Review:
    id: str
    score: float
    text: str


def read_reviews(movie_reviews_tsv):
    """All reviews of the file, in order; whitespace in the text (tabs included) becomes one space."""
    reviews = []
    content = input_files.read_text(movie_reviews_tsv, "movie reviews file")
    for line_number, line in enumerate(io.StringIO(content, newline=""), start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise MovieReviewsError(
                f"{movie_reviews_tsv}, line {line_number}: expected 'id<TAB>score<TAB>text', "
                f"got {len(fields)} field(s)")
        review_id, score, text = fields
        try:
            value = float(score)
        except ValueError:
            raise MovieReviewsError(
                f"{movie_reviews_tsv}, line {line_number}, column 2: score {score!r} is not a number"
            ) from None
        if not SCORE_RANGE[0] <= value <= SCORE_RANGE[1]:
            raise MovieReviewsError(
                f"{movie_reviews_tsv}, line {line_number}, column 2: score {value} is outside "
                f"[{SCORE_RANGE[0]}, {SCORE_RANGE[1]}]")
        reviews.append(Review(review_id.strip(), value, " ".join(text.split())))
    if not reviews:
        raise MovieReviewsError(f"{movie_reviews_tsv}: no reviews")
    return reviews


def split_of(review_id):
    """'dev', 'test' or 'train', fixed per review id."""
    bucket = zlib.crc32(review_id.encode("utf-8")) % 10
    return {0: "dev", 1: "test"}.get(bucket, "train")


def _row_order(review):
    """A fixed pseudo-random position, independent of the split hash."""
    return hashlib.sha256(review.id.encode("utf-8")).hexdigest()


def in_fixed_order(reviews):
    """The reviews in a fixed pseudo-random order (the source lists all positives first)."""
    return sorted(reviews, key=_row_order)


def sst2_label(score):
    """'1', '0', or None for the neutral sentences that are dropped."""
    if score > POSITIVE_ABOVE:
        return "1"
    if score < NEGATIVE_BELOW:
        return "0"
    return None


def stsb_score(score):
    low, high = SCORE_RANGE
    return (score - low) * (STSB_RANGE[1] - STSB_RANGE[0]) / (high - low) + STSB_RANGE[0]


def _write_if_changed(path, text):
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path, "r") as reader:
            if reader.read() == text:
                return
    io_utils.atomic_write_text(path, text)


def _write_splits(out_dir, rows_by_split):
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for split, (header, rows) in rows_by_split.items():
        lines = ["\t".join(header)] + ["\t".join(row) for row in rows]
        paths[split] = os.path.join(out_dir, f"{split}.tsv")
        _write_if_changed(paths[split], "\n".join(lines) + "\n")
    return paths


def write_sst2_task(movie_reviews_tsv, out_dir):
    """Writes `train.tsv`, `dev.tsv` (`sentence<TAB>label`) and `test.tsv` (`index<TAB>sentence`).

    Returns {split: path}.
    """
    rows = {"train": [], "dev": [], "test": []}
    for review in in_fixed_order(read_reviews(movie_reviews_tsv)):
        label = sst2_label(review.score)
        if label is None:
            continue
        split = split_of(review.id)
        rows[split].append([review.id, review.text] if split == "test" else [review.text, label])
    return _write_splits(out_dir, {
        "train": (["sentence", "label"], rows["train"]),
        "dev": (["sentence", "label"], rows["dev"]),
        "test": (["index", "sentence"], rows["test"]),
    })


def write_unlabelled_train_text(movie_reviews_tsv, path, sentences_per_document=4):
    """Writes the train split's sentences, neutral ones included, without scores, in the
    pretraining text format (one sentence per line, a blank line between documents) for
    task-adaptive pretraining. The sentences come from different reviews, so each document is
    `sentences_per_document` of them in the fixed pseudo-random row order: their masked words
    teach the reviews' vocabulary, their order carries nothing. Dev and test sentences are
    never written. Returns the number of sentences."""
    sentences = [review.text for review in in_fixed_order(read_reviews(movie_reviews_tsv))
                 if split_of(review.id) == "train"]
    documents = ["\n".join(sentences[start:start + sentences_per_document])
                 for start in range(0, len(sentences), sentences_per_document)]
    _write_if_changed(path, "\n\n".join(documents) + "\n")
    return len(sentences)


_STSB_HEADER = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
                "sentence1", "sentence2"]


def write_stsb_task(movie_reviews_tsv, out_dir):
    """Writes STS-B's layout: 10 columns with `score` last (train/dev), 9 for test.

    `sentence2` is empty (see the module docstring); `genre` is `movie-reviews`, `filename`
    `vader`, `year` 2014 and `old_index` the review id. Returns {split: path}.
    """
    rows = {"train": [], "dev": [], "test": []}
    counters = {"train": 0, "dev": 0, "test": 0}
    for review in in_fixed_order(read_reviews(movie_reviews_tsv)):
        split = split_of(review.id)
        index = review.id if split == "test" else str(counters[split])
        counters[split] += 1
        row = [index, "movie-reviews", "vader", "2014", review.id, "none", "none", review.text, ""]
        if split != "test":
            row.append(f"{stsb_score(review.score):.6f}")
        rows[split].append(row)
    return _write_splits(out_dir, {
        "train": (_STSB_HEADER + ["score"], rows["train"]),
        "dev": (_STSB_HEADER + ["score"], rows["dev"]),
        "test": (_STSB_HEADER, rows["test"]),
    })
