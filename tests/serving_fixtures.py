"""A real GLUE classifier export (tiny config, random weights) for the serving tests."""

from albert_tf.text import tf_tokenization
from albert_tf.export import classifier as classifier_export
from albert_tf.modeling import classifier, encoder
from tests.conftest import brown_config

LABELS = ["neg", "pos"]
MAX_SEQ_LENGTH = 64


def tiny_classifier_signatures(spm_model_file, regression=False):
    """`ClassifierSignatures` of a 2-layer, hidden-32 classifier with the in-graph tokenizer."""
    config = brown_config()
    tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, True)
    return classifier_export.ClassifierSignatures(
        classifier.AlbertClassifier(encoder.AlbertEncoder(config), 1 if regression else len(LABELS)),
        LABELS,
        MAX_SEQ_LENGTH, regression, tokenizer, tokenizer.cls_id, tokenizer.sep_id)
