"""SQuAD examples → fixed-length model features (sliding windows over the paragraph).

Layout of one feature (the original's): `[CLS] question [SEP] paragraph-window [SEP] padding`, segment
ids 0 for `[CLS]`+question+first `[SEP]`, 1 for the window and its `[SEP]`; `p_mask` is 1 where
an answer cannot start or end (question, `[SEP]`s, padding) and 0 for `[CLS]` and the window.
Windows advance by min(window length, doc_stride); a piece belongs to the window where it has
the most context (min(left, right) + 0.01·length). Training labels: the answer's piece span
shifted by len(question)+2, or 0/0 (`[CLS]`) when the window does not contain the whole answer
or the question is unanswerable — in v1 too, as the original.
"""

import dataclasses

from absl import logging

from albert_tf import errors, progress
from albert_tf.text import tokenization
from albert_tf.squad import alignment

FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class InputFeatures:
    """One window. Index lists and `token_is_max_context` serve post-processing only."""

    unique_id: int
    example_index: int
    doc_span_index: int
    doc_offset: int  # Position of the window's first piece (len(question) + 2).
    tok_start_to_orig_index: list
    tok_end_to_orig_index: list
    token_is_max_context: dict  # Sequence position → bool, for window positions only.
    input_ids: list
    input_mask: list
    segment_ids: list
    p_mask: list
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


@dataclasses.dataclass
class FeatureReport:
    """Counts (and qas ids) of what the conversion skipped or changed."""

    num_examples: int = 0
    num_features: int = 0
    num_positive: int = 0
    num_negative: int = 0
    mismatched: list = dataclasses.field(default_factory=list)
    truncated_questions: list = dataclasses.field(default_factory=list)
    bad_answer_spans: list = dataclasses.field(default_factory=list)


def check_is_max_context(doc_spans, cur_span_index, position):
    """True if `position` has its largest min(left, right) context in span `cur_span_index`."""
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


def doc_spans_for(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """(start, length) windows covering the paragraph, advancing by min(length, doc_stride)."""
    spans, start = [], 0
    while start < num_doc_tokens:
        length = min(num_doc_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_doc_tokens:
            break
        start += min(length, doc_stride)
    return spans


class _ParagraphCache:
    """Pieces and alignment per distinct paragraph: every question on it reuses them."""

    def __init__(self, sp_model, do_lower_case):
        self._sp_model, self._lower, self._cache = sp_model, do_lower_case, {}

    def get(self, paragraph_text):
        if paragraph_text not in self._cache:
            pieces = tokenization.encode_pieces(
                self._sp_model, tokenization.preprocess_text(paragraph_text, lower=self._lower))
            self._cache[paragraph_text] = alignment.align_pieces(paragraph_text, pieces,
                                                                 self._lower)
        return self._cache[paragraph_text]


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, do_lower_case,
                                 output_fn=None):
    """Returns (features, FeatureReport); also calls `output_fn(feature)` per feature if given.

    Questions are truncated to `max_query_length` pieces (counted in the report); paragraphs
    the alignment rejects are skipped with their qas ids (the original's "MISMATCH DETECTED!").
    """
    if max_seq_length <= max_query_length + 3:
        raise errors.UserInputError(f"max_seq_length ({max_seq_length}) must be greater than "
                         f"max_query_length ({max_query_length}) + 3")
    sp_model = tokenizer.sp_model
    cls_id, sep_id = sp_model.PieceToId("[CLS]"), sp_model.PieceToId("[SEP]")
    paragraphs = _ParagraphCache(sp_model, do_lower_case)
    report, features = FeatureReport(num_examples=len(examples)), []
    unique_id = FIRST_UNIQUE_ID

    converting = progress.track(examples, "SQuAD: converting questions to features",
                                len(examples), unit="questions")
    for example_index, example in enumerate(converting):
        query_ids = tokenization.encode_ids(
            sp_model, tokenization.preprocess_text(example.question_text, lower=do_lower_case))
        if len(query_ids) > max_query_length:
            report.truncated_questions.append(example.qas_id)
            query_ids = query_ids[:max_query_length]

        aligned = paragraphs.get(example.paragraph_text)
        if aligned is None:
            logging.info("MISMATCH DETECTED! Skipping question %s", example.qas_id)
            report.mismatched.append(example.qas_id)
            continue

        answer_span = None
        if is_training and not example.is_impossible:
            end_char = example.start_position + len(example.orig_answer_text) - 1
            answer_span = aligned.answer_piece_span(example.start_position, end_char)
            if answer_span[0] > answer_span[1]:
                logging.warning("Skipping question %s: its answer maps to no piece",
                                example.qas_id)
                report.bad_answer_spans.append(example.qas_id)
                continue

        doc_ids = [sp_model.PieceToId(piece) for piece in aligned.pieces]
        max_tokens_for_doc = max_seq_length - len(query_ids) - 3
        spans = doc_spans_for(len(doc_ids), max_tokens_for_doc, doc_stride)
        for span_index, (span_start, span_length) in enumerate(spans):
            feature = _window_feature(
                unique_id, example_index, span_index, spans, aligned, doc_ids, query_ids,
                cls_id, sep_id, max_seq_length)
            if is_training:
                _set_training_labels(feature, example, answer_span, span_start, span_length,
                                     len(query_ids))
                if feature.is_impossible:
                    report.num_negative += 1
                else:
                    report.num_positive += 1
            features.append(feature)
            if output_fn is not None:
                output_fn(feature)
            unique_id += 1

    report.num_features = len(features)
    if report.truncated_questions:
        logging.info("%d questions truncated to max_query_length=%d pieces",
                     len(report.truncated_questions), max_query_length)
    if report.mismatched:
        logging.warning("%d questions skipped: paragraph/piece MISMATCH (%s)",
                        len(report.mismatched), ", ".join(report.mismatched[:10]))
    return features, report


def _window_feature(unique_id, example_index, span_index, spans, aligned, doc_ids, query_ids,
                    cls_id, sep_id, max_seq_length):
    span_start, span_length = spans[span_index]
    input_ids = [cls_id] + list(query_ids) + [sep_id]
    segment_ids = [0] * len(input_ids)
    p_mask = [0] + [1] * (len(query_ids) + 1)
    doc_offset = len(input_ids)
    token_is_max_context = {}
    for i in range(span_start, span_start + span_length):
        token_is_max_context[len(input_ids)] = check_is_max_context(spans, span_index, i)
        input_ids.append(doc_ids[i])
    input_ids.append(sep_id)
    segment_ids += [1] * (span_length + 1)
    p_mask += [0] * span_length + [1]
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    return InputFeatures(
        unique_id=unique_id, example_index=example_index, doc_span_index=span_index,
        doc_offset=doc_offset,
        tok_start_to_orig_index=aligned.tok_start_to_orig_index[
            span_start:span_start + span_length],
        tok_end_to_orig_index=aligned.tok_end_to_orig_index[span_start:span_start + span_length],
        token_is_max_context=token_is_max_context,
        input_ids=input_ids + [0] * padding, input_mask=input_mask + [0] * padding,
        segment_ids=segment_ids + [0] * padding, p_mask=p_mask + [1] * padding)


def _set_training_labels(feature, example, answer_span, span_start, span_length, query_length):
    """Answer inside this window → its positions; otherwise (or impossible) → 0/0 ([CLS])."""
    if example.is_impossible or not (
            answer_span[0] >= span_start and answer_span[1] <= span_start + span_length - 1):
        feature.start_position, feature.end_position, feature.is_impossible = 0, 0, True
        return
    offset = query_length + 2 - span_start
    feature.start_position = answer_span[0] + offset
    feature.end_position = answer_span[1] + offset
    feature.is_impossible = False
