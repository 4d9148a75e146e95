"""RACE examples as model inputs: four `[CLS] context [SEP] question+option [SEP]` sequences.

As the original `race_utils.convert_single_example`: each choice keeps its LAST
`max_qa_length` tokens (the option sits at the end of "question option"), then the article is
cut from its end so that the whole fits `max_seq_length`. Segment 0 covers `[CLS]`, the article
and the first `[SEP]`; segment 1 the choice and the last `[SEP]`.
"""

import dataclasses

from albert_tf import errors
from albert_tf.race import reader

LEVEL_IDS = {level: index for index, level in enumerate(reader.LEVELS)}


@dataclasses.dataclass(frozen=True)
class RaceFeatures:
    """`input_ids`, `input_mask`, `segment_ids`: 4 lists of `max_seq_length` ints each."""

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int
    level_id: int
    example_id: str
    question_index: int


def check_lengths(max_seq_length, max_qa_length):
    """The original accepted any values; max_qa_length 0 kept every token (`tokens[-0:]`) and
    one above max_seq_length - 3 cut the article with a negative index."""
    if max_seq_length < 4:
        raise errors.UserInputError(f"--max_seq_length={max_seq_length}: must be at least 4 "
                         "([CLS], [SEP], [SEP] and one token)")
    if not 1 <= max_qa_length <= max_seq_length - 3:
        raise errors.UserInputError(
            f"--max_qa_length={max_qa_length}: must be between 1 and max_seq_length - 3 = "
            f"{max_seq_length - 3}")


def choice_tokens(context_tokens, qa_tokens, max_seq_length, max_qa_length):
    """(tokens, segment_ids) of one choice, unpadded."""
    qa_tokens = qa_tokens[-max_qa_length:]
    context_tokens = context_tokens[:max_seq_length - 3 - len(qa_tokens)]
    tokens = ["[CLS]"] + context_tokens + ["[SEP]"] + qa_tokens + ["[SEP]"]
    segment_ids = [0] * (len(context_tokens) + 2) + [1] * (len(qa_tokens) + 1)
    return tokens, segment_ids


class FeatureConverter:
    """Converts examples with one tokenizer; the article of consecutive questions is tokenized
    once (an article has about four questions)."""

    def __init__(self, tokenizer, max_seq_length, max_qa_length):
        check_lengths(max_seq_length, max_qa_length)
        self._tokenizer = tokenizer
        self._max_seq_length = max_seq_length
        self._max_qa_length = max_qa_length
        self._last_context = (None, None)

    def _context_tokens(self, context):
        if self._last_context[0] != context:
            self._last_context = (context, self._tokenizer.tokenize(context))
        return self._last_context[1]

    def convert(self, example):
        context_tokens = self._context_tokens(example.context)
        all_ids, all_mask, all_segments = [], [], []
        for choice in example.choices:
            tokens, segment_ids = choice_tokens(
                context_tokens, self._tokenizer.tokenize(choice), self._max_seq_length,
                self._max_qa_length)
            input_ids = self._tokenizer.convert_tokens_to_ids(tokens)
            padding = [0] * (self._max_seq_length - len(input_ids))
            all_ids.append(list(input_ids) + padding)
            all_mask.append([1] * len(input_ids) + padding)
            all_segments.append(segment_ids + padding)
        return RaceFeatures(
            input_ids=all_ids, input_mask=all_mask, segment_ids=all_segments,
            label_id=example.label, level_id=LEVEL_IDS[example.level],
            example_id=example.example_id, question_index=example.question_index)
