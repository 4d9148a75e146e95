"""Builds (or reuses) the feature cache of one RACE split: read → examples → features → TFRecord.

The training cache is written with its articles in a shuffled (seeded) order: the reader yields
every middle article before every high one, and the training input only shuffles within a
buffer, so an unshuffled file would train on middle school only for the first part of every
epoch. The questions of an article stay together, so its text is tokenized once.
"""

import dataclasses
import random

from absl import logging
import tensorflow as tf

from albert_tf import errors, progress
from albert_tf.files import feature_records
from albert_tf.text import tokenization
from albert_tf.race import cache, examples, features, reader

TRAIN_SHUFFLE_SEED = 12345


@dataclasses.dataclass(frozen=True)
class CacheSettings:
    """What a RACE feature cache depends on, and where unnamed caches go."""

    data_dir: str
    levels: tuple
    max_seq_length: int
    max_qa_length: int
    do_lower_case: bool
    spm_model_file: str = None
    vocab_file: str = None
    default_dir: str = None

    def path(self, split, requested_path=None):
        fingerprint = feature_records.file_fingerprint(self.spm_model_file, self.vocab_file)
        key = cache.cache_key(split, self.levels, self.max_seq_length, self.max_qa_length,
                              fingerprint, self.do_lower_case)
        return feature_records.keyed_path(requested_path, self.default_dir, key)


def prepare_split(settings, split, requested_path=None, tokenizer=None):
    """Returns the cache path of `split`, writing the cache first if it does not exist;
    `tokenizer`: the run's (a job's), else one made from `settings`."""
    features.check_lengths(settings.max_seq_length, settings.max_qa_length)
    path = settings.path(split, requested_path)
    if tf.io.gfile.exists(path):
        logging.info("RACE %s: reusing the feature cache %s", split, path)
        return path
    tokenizer = tokenizer or tokenization.FullTokenizer.from_scratch(
        settings.vocab_file, settings.do_lower_case, settings.spm_model_file)
    normalize = examples.text_normalizer(bool(settings.spm_model_file), settings.do_lower_case)
    articles = list(reader.read_articles(settings.data_dir, split, settings.levels))
    if not any(article.questions for article in articles):
        raise errors.UserInputError(f"{settings.data_dir}/RACE/{split}: no questions found for levels "
                         f"{', '.join(settings.levels)}")
    if split == "train":
        random.Random(TRAIN_SHUFFLE_SEED).shuffle(articles)
    converter = features.FeatureConverter(
        tokenizer, settings.max_seq_length, settings.max_qa_length)
    questions = [example for article in articles
                 for example in examples.article_examples(article, normalize)]
    converting = progress.track(questions, f"RACE {split}: converting questions", len(questions),
                                unit="questions")
    count = cache.write((converter.convert(example) for example in converting), path)
    logging.info("RACE %s: wrote %d questions to %s", split, count, path)
    return path
