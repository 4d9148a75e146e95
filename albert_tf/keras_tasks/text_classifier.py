"""`AlbertTextClassifier`: a compiled `keras.Model` that fits, evaluates and predicts on raw text.

    model = AlbertTextClassifier.from_preset("albert_base", num_classes=3)
    model.fit(texts, labels, epochs=2)             # labels: ints or label names
    logits = model.predict(texts)                  # [N, 3]
    model.save_to_preset("my_model")               # the scripts' layout, head and label names
    model.export("my_model/export")                # run_classifier.py's SavedModel, for serve.py

keras-hub's split: a backbone (`modeling.encoder.AlbertEncoder`), a preprocessor
(`preprocessor.AlbertTextClassifierPreprocessor`) and the task around them (the GLUE head of
`modeling.classifier.AlbertClassifier`, its original checkpoint names). The model's output is
the logits alone, so Keras' losses and metrics (`compile(metrics=["accuracy"])`) apply as they
are. On strings `fit`, `evaluate` and `predict` tokenize in the tf.data pipeline (parallel to
the training step) and batch as `run_classifier.py` does; on id dicts they are Keras' own.
Training is Keras' `fit`: the defaults are the original's AdamW (constant rate), the clipping
to global norm 1.0 and the softmax cross-entropy of `run_classifier.py`.
"""

import keras
import numpy as np
from absl import logging

from albert_tf import checkpoints, errors
from albert_tf.export import classifier as classifier_export
from albert_tf.keras_tasks import precision, presets
from albert_tf.keras_tasks import preprocessor as preprocessor_lib
from albert_tf.modeling import classifier, encoder
from albert_tf.training import optimization

DEFAULT_LEARNING_RATE = 5e-5  # run_classifier.py's --learning_rate default
STEPS_PER_EXECUTION = 32


class AlbertTextClassifier(keras.Model):
    """Strings (or pairs of strings) in, logits [B, num_classes] out. See the module docstring.

    Args:
      backbone: an `AlbertEncoder`.
      num_classes: the number of labels.
      preprocessor: an `AlbertTextClassifierPreprocessor` (None: the model takes id dicts only).
      label_names: the label of each class index (default "0", "1", ...); `fit` also takes
        labels by these names, and `save_to_preset` / `export` keep them.
      dropout: on the pooled output, the original's 0.1.
    """

    def __init__(self, backbone, num_classes, preprocessor=None, label_names=None, dropout=0.1,
                 **kwargs):
        super().__init__(**kwargs)
        if num_classes < 2:
            raise errors.UserInputError(f"num_classes={num_classes}: a classifier needs at "
                                        "least 2 classes")
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.classifier = classifier.AlbertClassifier(backbone, num_classes, dropout_rate=dropout)
        self.num_classes = int(num_classes)
        self.label_names_given = label_names is not None
        self.label_names = _checked_label_names(label_names, num_classes)
        self.built = True
        self.compile()

    # ----------------------------------------------------------------------------- presets

    @classmethod
    def from_preset(cls, folder, num_classes=None, label_names=None, max_seq_length=None,
                    do_lower_case=None, dtype="float32", dropout=0.1):
        """The classifier of a preset folder (`presets`), compiled with the defaults.

        The head is loaded when the folder's checkpoint has one of `num_classes` labels (a
        folder `save_to_preset` wrote, a fine-tuning output); otherwise it is new. `num_classes`
        and `label_names` default to the folder's `text_classifier.json`."""
        preset = presets.read_preset(folder)
        saved_names = preset.task.get("label_names")
        if label_names is not None:
            label_names = [str(name) for name in label_names]
        if num_classes is None:
            names = label_names or saved_names
            if not names:
                raise errors.UserInputError(
                    f"{folder}: a pretrained model has no head; give num_classes (or "
                    f"label_names)")
            num_classes = len(names)
        if label_names is None and saved_names and len(saved_names) == num_classes:
            label_names = saved_names
        text_preprocessor = preprocessor_lib.AlbertTextClassifierPreprocessor.from_preset(
            preset, max_seq_length, do_lower_case)
        with precision.dtype_policy(dtype):
            model = cls(encoder.AlbertEncoder(preset.config, skip_padding=True), num_classes,
                        text_preprocessor, label_names, dropout)
        report = checkpoints.load_into(model.checkpoint_variables(), preset.checkpoint,
                                       new_heads=True)
        not_loaded = set(report.missing) | {entry[0] for entry in report.mismatched}
        if not_loaded & set(model.classifier.head.checkpoint_variables()):
            logging.info("%s: a new head of %d classes (the checkpoint has none of that shape)",
                         folder, num_classes)
        return model

    def save_to_preset(self, folder):
        """Writes `folder` as a preset the scripts read: albert_config.json, 30k-clean.model,
        model.ckpt-<step> in the original layout (head included) and text_classifier.json
        (label names, max_seq_length, casing); whole or not at all."""
        if self.preprocessor is None:
            raise errors.UserInputError("save_to_preset needs the model's preprocessor (its "
                                        "SentencePiece model)")
        step = int(self.optimizer.iterations.numpy()) if self.optimizer is not None else 0
        return presets.write_preset(
            folder, self.backbone.config, self.preprocessor.spm_model_file,
            self.checkpoint_variables(),
            {"label_names": self.label_names, "max_seq_length": self.preprocessor.max_seq_length,
             "do_lower_case": self.preprocessor.do_lower_case}, step)

    def export(self, export_dir, threshold=None):
        """Writes `<export_dir>/<version>/`, the SavedModel `run_classifier.py --export_dir`
        writes (signatures serving_default, ids, classify, text; warm-up requests), with this
        model's label names; returns its path. `serve.py --export_dir` serves it."""
        if self.preprocessor is None:
            raise errors.UserInputError("export needs the model's preprocessor (the text "
                                        "signature's tokenizer)")
        tokenizer = self.preprocessor.tokenizer
        signatures = classifier_export.ClassifierSignatures(
            self.classifier, self.label_names, self.preprocessor.max_seq_length,
            regression=False, tokenizer=tokenizer, cls_id=tokenizer.cls_id,
            sep_id=tokenizer.sep_id, threshold=threshold,
            batching=self.preprocessor.batching.served())
        return classifier_export.write_saved_model(signatures, export_dir)

    def checkpoint_variables(self):
        """`{original checkpoint name: variable}`: `bert/...`, `output_weights`, `output_bias`."""
        return self.classifier.checkpoint_variables()

    # -------------------------------------------------------------------------------- Keras

    def call(self, inputs, training=False):
        if preprocessor_lib.is_text(inputs):
            inputs = self._preprocessor_or_error()(inputs)
        return self.classifier(inputs, training=training)["logits"]

    def compile(self, optimizer="adamw", loss="auto", metrics="auto", jit_compile=False,
                steps_per_execution=STEPS_PER_EXECUTION, **kwargs):
        """`keras.Model.compile` with this task's defaults: the original AdamW at
        run_classifier.py's rate 5e-5 (`"lamb"` for LAMB; an `AdamWeightDecay`/`LAMB` made
        without names gets the model's checkpoint names, which its weight-decay exclusions
        need), sparse softmax cross-entropy on the logits, accuracy, and several steps per
        call of the compiled step, as the training loop's iterations_per_loop (one call per
        step cost a small model a fifth more time per example)."""
        if optimizer in optimization.OPTIMIZERS:
            optimizer_class = optimization.LAMB if optimizer == "lamb" else (
                optimization.AdamWeightDecay)
            optimizer = optimizer_class(DEFAULT_LEARNING_RATE, name=optimizer)
        if isinstance(optimizer, optimization.AdamWeightDecay) and not optimizer.built:
            optimizer.name_variables(self.checkpoint_variables())
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=jit_compile,
                        steps_per_execution=steps_per_execution, **kwargs)

    def fit(self, x=None, y=None, batch_size=32, epochs=1, validation_data=None, shuffle=True,
            seed=None, **kwargs):
        """Keras' `fit`; on strings `x` (a list, or a pair of lists) with labels `y` (class
        indices or label names), every epoch takes each example once, tokenized in the input
        pipeline and batched by length bucket. `validation_data`: (texts, labels)."""
        if x is None or not preprocessor_lib.is_text(x):
            return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                               validation_data=validation_data, shuffle=shuffle, **kwargs)
        texts, labels = self._texts_and_labels(x, y, "x", "y")
        dataset = self._preprocessor_or_error().training_batches(texts, labels, batch_size,
                                                                 shuffle, seed)
        if validation_data is not None and preprocessor_lib.is_text(validation_data[0]):
            validation_data = self._batches(*validation_data[:2], batch_size=batch_size,
                                            what="validation_data")
        return super().fit(dataset, epochs=epochs, validation_data=validation_data,
                           shuffle=False, **kwargs)  # shuffled in `training_batches`

    def evaluate(self, x=None, y=None, batch_size=32, **kwargs):
        if x is None or not preprocessor_lib.is_text(x):
            return super().evaluate(x, y, batch_size=batch_size, **kwargs)
        return super().evaluate(self._batches(x, y, batch_size=batch_size), **kwargs)

    def predict(self, x, batch_size=32, **kwargs):
        """Logits [N, num_classes] in input order (`label_names[argmax]` is the label)."""
        if not preprocessor_lib.is_text(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        texts = preprocessor_lib.as_text_arrays(x, "x")
        return super().predict(self._preprocessor_or_error().batches(texts, None, batch_size),
                               **kwargs)

    def predict_labels(self, x, batch_size=32):
        """The label name of each text."""
        logits = self.predict(x, batch_size=batch_size, verbose=0)
        return [self.label_names[index] for index in np.argmax(logits, axis=-1)]

    # ---------------------------------------------------------------------------- helpers

    def _preprocessor_or_error(self):
        if self.preprocessor is None:
            raise errors.UserInputError("this model has no preprocessor: give it id dicts "
                                        "(input_ids, input_mask, segment_ids), not text")
        return self.preprocessor

    def _batches(self, x, y, batch_size, what="x"):
        texts, labels = self._texts_and_labels(x, y, what, what + " labels")
        return self._preprocessor_or_error().batches(texts, labels, batch_size)

    def _texts_and_labels(self, x, y, x_name, y_name):
        texts = preprocessor_lib.as_text_arrays(x, x_name)
        count = len(texts[0]) if isinstance(texts, tuple) else len(texts)
        if y is None:
            raise errors.UserInputError(f"{y_name}: labels are needed, one per text")
        labels = self._label_ids(y, y_name)
        if len(labels) != count:
            raise errors.UserInputError(f"{y_name}: {len(labels)} labels for {count} texts")
        return texts, labels

    def _label_ids(self, y, what):
        """Class indices of `y`, given as indices or as label names."""
        labels = np.asarray(y)
        if labels.ndim != 1:
            raise errors.UserInputError(f"{what}: expected one label per text, got shape "
                                        f"{labels.shape}")
        if labels.dtype.kind in ("U", "S", "O"):
            labels = labels.astype(str)
            if not self.label_names_given:
                names = sorted(set(labels.tolist()))
                if len(names) != self.num_classes:
                    raise errors.UserInputError(
                        f"{what}: {len(names)} distinct label names {names[:10]} for "
                        f"num_classes={self.num_classes}; give label_names= in from_preset")
                self.label_names, self.label_names_given = names, True
            index = {name: i for i, name in enumerate(self.label_names)}
            unknown = sorted(set(labels.tolist()) - set(index))
            if unknown:
                raise errors.UserInputError(f"{what}: unknown label {unknown[0]!r}; expected "
                                            f"one of {self.label_names}")
            return np.array([index[name] for name in labels.tolist()], np.int32)
        if labels.dtype.kind not in ("i", "u"):
            raise errors.UserInputError(f"{what}: expected class indices (integers) or label "
                                        f"names (strings), got dtype {labels.dtype}")
        outside = labels[(labels < 0) | (labels >= self.num_classes)]
        if outside.size:
            raise errors.UserInputError(f"{what}: label {int(outside[0])} outside "
                                        f"[0, {self.num_classes}) for num_classes="
                                        f"{self.num_classes}")
        return labels.astype(np.int32)


def _checked_label_names(label_names, num_classes):
    if label_names is None:
        return [str(index) for index in range(num_classes)]
    names = [str(name) for name in label_names]
    if len(names) != num_classes or len(set(names)) != len(names):
        raise errors.UserInputError(f"label_names={names}: expected {num_classes} distinct "
                                    "names, one per class")
    return names
