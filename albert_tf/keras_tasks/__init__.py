"""Keras task models on raw strings (keras-hub's backbone / preprocessor / task split).

`AlbertTextClassifier.from_preset(folder, num_classes=N)` loads a preset folder (`presets`) into
a compiled `keras.Model` whose `fit`, `evaluate` and `predict` take strings; the original AdamW
and LAMB are Keras optimizers (`training.optimization`). `AlbertMaskedLM.from_preset(folder)`
fills `[MASK]` in strings with a pretrained model's masked-LM head.
"""

from albert_tf.keras_tasks.masked_lm import AlbertMaskedLM
from albert_tf.keras_tasks.masked_lm_preprocessor import AlbertMaskedLMPreprocessor
from albert_tf.keras_tasks.preprocessor import AlbertTextClassifierPreprocessor
from albert_tf.keras_tasks.text_classifier import AlbertTextClassifier
from albert_tf.training.optimization import LAMB, AdamWeightDecay, WarmupPolynomialDecay

__all__ = ["AlbertMaskedLM", "AlbertMaskedLMPreprocessor", "AlbertTextClassifier",
           "AlbertTextClassifierPreprocessor", "AdamWeightDecay", "LAMB", "WarmupPolynomialDecay"]
