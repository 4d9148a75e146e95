"""A real GLUE classifier export (tiny config, random weights) for the serving tests."""

from albert_tf import tf_tokenization
from albert_tf.config import AlbertConfig
from albert_tf.export import classifier as classifier_export
from albert_tf.modeling import classifier

LABELS = ["neg", "pos"]
MAX_SEQ_LENGTH = 64


def tiny_classifier_signatures(spm_model_file, regression=False):
    """`ClassifierSignatures` of a 2-layer, hidden-32 classifier with the in-graph tokenizer."""
    config = AlbertConfig(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, True)
    return classifier_export.ClassifierSignatures(
        classifier.AlbertClassifier(config, 1 if regression else len(LABELS)), LABELS,
        MAX_SEQ_LENGTH, regression, tokenizer, tokenizer.cls_id, tokenizer.sep_id)
