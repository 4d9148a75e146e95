"""Two small labelled tasks in the shapes a user brings to `run_classifier.py --train_file`, built
from `make data`'s files, so that advice for own-data runs can be measured on data it did not
come from:

- `movie_sentiment` (CSV, 2 labels): Rotten Tomatoes sentences rated above 0.5 `positive`,
  below -0.5 `negative` (albert_tf.glue.movie_reviews' rule and splits), the first
  MOVIE_TRAIN and MOVIE_DEV of the train and dev splits in their fixed shuffled order.
- `brown_genre` (JSON Lines, 3 labels): Brown Corpus sentences labelled by the genre of their
  document, `press` (categories A-C: reportage, editorials, reviews), `learned` (J) or
  `fiction` (K-R); BROWN_TRAIN_PER_LABEL and BROWN_DEV_PER_LABEL sentences of at least
  BROWN_MIN_WORDS words a label, drawn with a fixed seed, the dev sentences from other documents
  than the training ones (documents 8 and 9 of every 10, as the tagging splits).
"""

import csv
import io
import json
import os
import random

from albert_tf.demo import data_sources
from albert_tf.files import io_utils
from albert_tf.glue import movie_reviews

MOVIE_TRAIN = 2000
MOVIE_DEV = 1000
MOVIE_LABELS = {"0": "negative", "1": "positive"}
BROWN_GENRES = {"press": "abc", "learned": "j", "fiction": "klmnpr"}
BROWN_TRAIN_PER_LABEL = 700
BROWN_DEV_PER_LABEL = 300
BROWN_MIN_WORDS = 5
BROWN_SAMPLE_SEED = 0


def write_movie_sentiment(movie_reviews_tsv, out_dir):
    """train.csv and dev.csv (`text,label` with a header row, quoted as Python's csv writes)."""
    rows = {"train": [], "dev": []}
    for review in movie_reviews.in_fixed_order(movie_reviews.read_reviews(movie_reviews_tsv)):
        label = movie_reviews.sst2_label(review.score)
        split = movie_reviews.split_of(review.id)
        if label is not None and split in rows:
            rows[split].append((review.text, MOVIE_LABELS[label]))
    paths = {}
    for split, limit in (("train", MOVIE_TRAIN), ("dev", MOVIE_DEV)):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["text", "label"])
        writer.writerows(rows[split][:limit])
        paths[split] = os.path.join(out_dir, f"{split}.csv")
        _write_if_changed(paths[split], buffer.getvalue())
    return paths


def genre_of(category_letter):
    """The task's label of a Brown category (`a`..`r`), None for the ones it leaves out."""
    return next((genre for genre, letters in BROWN_GENRES.items() if category_letter in letters), None)


def write_brown_genre(data_dir, out_dir):
    """train.jsonl and dev.jsonl (`{"text": ..., "label": ...}` a line)."""
    pools = {split: {genre: [] for genre in BROWN_GENRES} for split in ("train", "dev")}
    for index, (category, sentences) in enumerate(data_sources.brown_documents(data_dir)):
        genre = genre_of(category)
        if genre is None:
            continue
        split = "dev" if data_sources.TAGGING_SPLITS.get(index % data_sources.BROWN_SHARDS) else "train"
        pools[split][genre] += [s for s in sentences if len(s.split()) >= BROWN_MIN_WORDS]
    sampler = random.Random(BROWN_SAMPLE_SEED)
    paths = {}
    for split, per_label in (("train", BROWN_TRAIN_PER_LABEL), ("dev", BROWN_DEV_PER_LABEL)):
        rows = [(text, genre) for genre, pool in pools[split].items() for text in sampler.sample(pool, per_label)]
        sampler.shuffle(rows)
        paths[split] = os.path.join(out_dir, f"{split}.jsonl")
        _write_if_changed(paths[split], "".join(
            json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n" for text, label in rows))
    return paths


def _write_if_changed(path, text):
    """Rewriting an unchanged file would change nothing but its time, which the record caches
    do not read; skipping it keeps a rerun's files byte for byte."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as reader:
            if reader.read() == text:
                return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    io_utils.atomic_write_text(path, text)


TASKS = {
    "movie_sentiment": lambda data_dir, out_dir: write_movie_sentiment(
        os.path.join(data_dir, "movie_reviews.tsv"), out_dir),
    "brown_genre": write_brown_genre,
}


def write_task(name, data_dir, out_dir):
    """{"train", "dev"}: the paths of task `name`'s files under `out_dir`."""
    return TASKS[name](data_dir, out_dir)
