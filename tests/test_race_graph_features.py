"""The raw-text serving features (in the graph) against the Python path, text by text."""

import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import tf_tokenization, tokenization
from albert_tf.race import examples, features, graph_features, reader
from tests import race_fixtures


def test_question_with_option_in_the_graph_matches_python():
    questions = ["Tom buys _ at the market.", "Where is it?", "_ and _ again", "__", "", "end_"]
    options = ["apples", "the park", "x", "yz", "alone", "!"]
    result = graph_features.question_with_option(tf.constant(questions), tf.constant(options))
    assert [r.decode() for r in result.numpy()] == [
        examples.question_with_option(q, o) for q, o in zip(questions, options)]


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case,max_seq_length,max_qa_length",
                         [(True, 48, 12), (False, 32, 20), (True, 128, 125)])
def test_text_encoder_matches_the_python_features(spm_model_file, do_lower_case,
                                                  max_seq_length, max_qa_length):
    articles = race_fixtures.make_articles(2, seed=7)["high"]
    articles[0]["questions"][0] = "Caf\u00e9  __ costs 3,000 dollars, _ said \u00dcnal?"
    articles[0]["options"][0][1:3] = ["  The  \u00c9LAN ", ""]
    articles[1]["article"] = "Short."
    encoder = graph_features.RaceTextEncoder(
        tf_tokenization.InGraphTokenizer(spm_model_file, do_lower_case), max_seq_length,
        max_qa_length)
    converter = features.FeatureConverter(
        tokenization.FullTokenizer(None, do_lower_case, spm_model_file), max_seq_length,
        max_qa_length)
    normalize = examples.text_normalizer(True, do_lower_case)
    for raw in articles:
        article = reader.parse_article(json.dumps(raw), "high", "fixture")
        count = len(raw["questions"])
        encoded = encoder(tf.constant([raw["article"]] * count), tf.constant(raw["questions"]),
                          tf.constant(raw["options"]))
        for index, example in enumerate(examples.article_examples(article, normalize)):
            expected = converter.convert(example)
            for name in ("input_ids", "input_mask", "segment_ids"):
                np.testing.assert_array_equal(encoded[name][index].numpy(),
                                              getattr(expected, name), err_msg=name)
