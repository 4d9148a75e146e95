"""RACE questions as four-choice examples: each choice is the question joined with one option.

As the original: a cloze question (one containing `_`) has the blank replaced by the option,
any other question is followed by the option ("question option"). Texts are normalised first
(`preprocess_text` with a SentencePiece model, `convert_to_unicode` with a WordPiece vocab).
"""

import dataclasses

from albert_tf.text import tokenization
from albert_tf.race import reader


@dataclasses.dataclass(frozen=True)
class RaceExample:
    """One question: the article text, the four question+option texts and the answer index."""

    example_id: str
    question_index: int
    level: str
    context: str
    choices: tuple
    label: int


def text_normalizer(use_spm, do_lower_case):
    """The original's `RaceProcessor.process_text`."""
    if use_spm:
        return lambda text: tokenization.preprocess_text(text, lower=do_lower_case)
    return tokenization.convert_to_unicode


def question_with_option(question, option):
    if "_" in question:
        return question.replace("_", option)
    return " ".join([question, option])


def article_examples(article, normalize):
    """The examples of one `reader.RaceArticle`, in question order."""
    context = normalize(article.article)
    examples = []
    for index, (question, options, label) in enumerate(
            zip(article.questions, article.options, article.labels)):
        question = normalize(question)
        examples.append(RaceExample(
            example_id=article.article_id, question_index=index, level=article.level,
            context=context,
            choices=tuple(question_with_option(question, normalize(option)) for option in options),
            label=label))
    return examples


def read_examples(data_dir, split, levels, normalize):
    """Every example of `split` (see `reader.read_articles` for the layouts accepted)."""
    examples = []
    for article in reader.read_articles(data_dir, split, levels):
        examples.extend(article_examples(article, normalize))
    return examples
