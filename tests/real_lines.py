"""At least 10,000 real lines for tokenizer tests: Brown Corpus, Botchan and movie reviews.

Chosen to cover what the tokenizer rules touch: every line with a digit followed by a comma,
every line with a non-ASCII character or a '' quote, plus plain text from all three sources.
"""

import re

_INTERESTING = re.compile(r"\d,|[^\x00-\x7f]|''|``")


def _read_lines(path):
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def load(real_data, plain_per_source=3000):
    """Deterministic list of lines (order: Brown, Botchan, movie review texts)."""
    brown = [line for path in real_data["brown"] for line in _read_lines(path)]
    botchan = _read_lines(real_data["botchan"])
    reviews = [line.split("\t", 2)[2] for line in _read_lines(real_data["movie_reviews"])]
    selected = []
    for source in (brown, botchan, reviews):
        selected += source[:plain_per_source]
        selected += [line for line in source[plain_per_source:] if _INTERESTING.search(line)]
    return selected
