"""RACE features from raw text inside a graph: the serving counterpart of `examples` + `features`.

`RaceTextEncoder(tokenizer, max_seq_length, max_qa_length)(article, question, options)` takes
string tensors [B], [B], [B, 4] and returns int32 `input_ids`, `input_mask`, `segment_ids`
[B, 4, max_seq_length] equal to what `examples.article_examples` + `features.FeatureConverter`
give for the same texts: question and option normalised (`preprocess_text`), `_` replaced by
the option (cloze) or "question option", the last `max_qa_length` tokens of that kept, the
article cut from its end to fit. Only with a SentencePiece model (`tf_tokenization`).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.race import features, reader


def question_with_option(questions, options):
    """In-graph `examples.question_with_option` over [N] strings: every `_` replaced by the
    option when there is one, else "question option"."""
    parts = tf.strings.split(questions, "_")
    lengths = parts.row_lengths()
    row_ids = parts.value_rowids()
    is_last = tf.ragged.range(lengths).flat_values == tf.gather(lengths - 1, row_ids)
    filled = tf.where(is_last, parts.flat_values,
                      tf.strings.join([parts.flat_values, tf.gather(options, row_ids)]))
    cloze = tf.strings.reduce_join(
        tf.RaggedTensor.from_value_rowids(filled, row_ids, nrows=tf.size(questions,
                                                                         out_type=tf.int64)),
        axis=1)
    return tf.where(lengths > 1, cloze, tf.strings.join([questions, options], separator=" "))


def pack_choices(context_ids, qa_ids, max_seq_length, max_qa_length, cls_id, sep_id):
    """In-graph `features.choice_tokens` + padding over ragged [N, (n)] ids → int32 [N, S]."""
    qa_ids = tf.cast(qa_ids, tf.int32)[:, -max_qa_length:]
    budget = max_seq_length - 3 - qa_ids.row_lengths()
    context_ids = tf.cast(context_ids, tf.int32)
    keep = tf.ragged.range(context_ids.row_lengths()) < tf.expand_dims(budget, 1)
    context_ids = tf.ragged.boolean_mask(context_ids, keep)
    marker = tf.RaggedTensor.from_tensor(tf.ones([context_ids.nrows(), 1], tf.int32))
    ids = tf.concat([marker * cls_id, context_ids, marker * sep_id, qa_ids, marker * sep_id], 1)
    types = tf.concat([marker * 0, tf.zeros_like(context_ids), marker * 0, tf.ones_like(qa_ids),
                       marker], axis=1)
    input_ids, input_mask = tf_text.pad_model_inputs(ids, max_seq_length)
    segment_ids, _ = tf_text.pad_model_inputs(types, max_seq_length)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


class RaceTextEncoder:
    """Raw article, question and four options → the model's [B, 4, S] inputs."""

    def __init__(self, tokenizer, max_seq_length, max_qa_length):
        features.check_lengths(max_seq_length, max_qa_length)
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.max_qa_length = max_qa_length

    def __call__(self, article, question, options):
        choices = reader.NUM_CHOICES
        batch = tf.shape(article)[0]
        article_ids = self.tokenizer.tokenize(article)
        questions = tf.repeat(self.tokenizer.preprocess(question), choices)
        flat_options = self.tokenizer.preprocess(tf.reshape(options, [-1]))
        # tokenize() preprocesses again; on already preprocessed text that changes nothing.
        qa_ids = self.tokenizer.tokenize(question_with_option(questions, flat_options))
        context_ids = tf.gather(article_ids, tf.repeat(tf.range(batch), choices))
        packed = pack_choices(context_ids, qa_ids, self.max_seq_length, self.max_qa_length,
                              self.tokenizer.cls_id, self.tokenizer.sep_id)
        return {name: tf.reshape(value, [batch, choices, self.max_seq_length])
                for name, value in packed.items()}
