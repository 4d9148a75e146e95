"""`albert_tf.AlbertMaskedLM`: fill-mask on raw strings with a pretrained model's own head.

    model = albert_tf.AlbertMaskedLM.from_preset("albert_base")
    model.fill_mask(["The [MASK] sat on the mat."], top_k=5)  # [[[("▁cat", 0.31), ...]]]

keras-hub's split: a backbone (`modeling.encoder.AlbertEncoder`), a preprocessor
(`masked_lm_preprocessor.AlbertMaskedLMPreprocessor`, which says how `[MASK]` is tokenized)
and the task (`modeling.pretraining.AlbertPretrainingModel`: the masked-LM head `cls/predictions`
tied to the word embeddings, as the pretraining checkpoints store it). The head is read from the
preset's checkpoint, never made up: a checkpoint without it (a fine-tuned classifier, an
encoder-only export) is refused. Training on raw text is not offered; `run_pretraining.py
--init_checkpoint=<a folder save_to_preset wrote>` continues pretraining.
"""

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import checkpoints, errors
from albert_tf.keras_tasks import precision, presets
from albert_tf.keras_tasks import preprocessor as preprocessor_lib
from albert_tf.keras_tasks.masked_lm_preprocessor import MASK_TOKEN, AlbertMaskedLMPreprocessor
from albert_tf.modeling import encoder, pretraining

HEAD_SCOPE = "cls/predictions/"
HEAD_NAMES = ("transform/dense/kernel", "transform/dense/bias", "transform/LayerNorm/beta",
              "transform/LayerNorm/gamma", "output_bias")  # `MaskedLMHead.checkpoint_variables`


class AlbertMaskedLM(keras.Model):
    """Strings with `[MASK]` in, logits at the masks out. See the module docstring.

    Args:
      backbone: an `AlbertEncoder`.
      preprocessor: an `AlbertMaskedLMPreprocessor` (None: the model takes id dicts only).
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.pretraining = pretraining.AlbertPretrainingModel(backbone)
        # Names the checkpoint lacked (a Hub AlbertForMaskedLM has no pooler and no
        # sentence-order head): left out of save_to_preset, so no untrained weight passes as
        # a pretrained one.
        self.names_not_loaded = ()
        self.jit_compile = False
        self.built = True

    @classmethod
    def from_preset(cls, folder, max_seq_length=None, do_lower_case=None, dtype="float32"):
        """The masked LM of a preset folder (`presets`) whose checkpoint has the masked-LM head
        (`cls/predictions/...`): a released pretraining checkpoint, `run_pretraining.py`'s
        output, `import_from_hf.py` of an AlbertForMaskedLM or AlbertForPreTraining, a folder
        `save_to_preset` wrote. max_seq_length and casing default to the folder's
        masked_lm.json, else 128 and lower case."""
        preset = presets.read_preset(folder, presets.MASKED_LM_NAME)
        _check_head(preset)
        text_preprocessor = AlbertMaskedLMPreprocessor.from_preset(preset, max_seq_length,
                                                                   do_lower_case)
        with precision.dtype_policy(dtype):
            model = cls(encoder.AlbertEncoder(preset.config, skip_padding=True),
                        text_preprocessor)
        report = checkpoints.load_into(model.checkpoint_variables(), preset.checkpoint)
        if report.missing:
            logging.info("%s: the checkpoint has no %s (unused by the masked LM, not saved by "
                         "save_to_preset)", preset.folder, ", ".join(report.missing))
        model.names_not_loaded = tuple(report.missing)
        return model

    def save_to_preset(self, folder):
        """Writes `folder` as a preset `from_preset` and the scripts read: albert_config.json,
        30k-clean.model, model.ckpt-0 in the original layout (`bert/...`, `cls/predictions/...`
        and `cls/seq_relationship/...` when loaded; `run_pretraining.py --init_checkpoint`
        warm-starts from it) and masked_lm.json (max_seq_length, casing); whole or not at all."""
        if self.preprocessor is None:
            raise errors.UserInputError("save_to_preset needs the model's preprocessor (its "
                                        "SentencePiece model)")
        variables = {name: variable for name, variable in self.checkpoint_variables().items()
                     if name not in self.names_not_loaded}
        return presets.write_preset(
            folder, self.backbone.config, self.preprocessor.spm_model_file, variables,
            {"max_seq_length": self.preprocessor.max_seq_length,
             "do_lower_case": self.preprocessor.do_lower_case}, task_name=presets.MASKED_LM_NAME)

    def checkpoint_variables(self):
        """`{original checkpoint name: variable}`: `bert/...`, `cls/predictions/...`,
        `cls/seq_relationship/...`."""
        return self.pretraining.checkpoint_variables()

    # -------------------------------------------------------------------------------- Keras

    def call(self, inputs, training=False):
        """Strings, or ids with `masked_lm_positions` [B, M] -> float32 logits [B, M, vocab]."""
        if preprocessor_lib.is_text(inputs):
            inputs = self._preprocessor_or_error()(inputs)
        if "masked_lm_positions" not in inputs:
            raise errors.UserInputError(f"inputs {sorted(inputs)}: the masked LM needs "
                                        "masked_lm_positions, the positions to predict")
        return self.pretraining(inputs, training=training)["mlm_logits"]

    def predict(self, x, batch_size=32, **kwargs):
        """On strings: a list with, for each text, float32 logits [its masks, vocab_size] (one
        row per `[MASK]`, in text order). On id dicts: Keras' `predict`, [N, M, vocab_size]."""
        if not preprocessor_lib.is_text(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        features, counts = self._features(x)
        preprocessor = self.preprocessor
        batches = tf.data.Dataset.from_tensor_slices(features).batch(batch_size).map(
            lambda batch: (preprocessor.trim(batch),))
        logits = super().predict(batches, **kwargs)
        return [logits[index, :count] for index, count in enumerate(counts)]

    def fill_mask(self, texts, top_k=5, batch_size=32):
        """For each text, for each `[MASK]` in it (in order), the `top_k` likeliest pieces as
        (SentencePiece piece, probability) pairs, likeliest first; probabilities are the
        softmax over the whole vocabulary ("▁" starts a word)."""
        pieces = self._preprocessor_or_error().pieces
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= len(pieces):
            raise errors.UserInputError(f"top_k={top_k!r}: expected an integer in "
                                        f"[1, {len(pieces)}]")
        results = []
        for logits in self.predict(texts, batch_size=batch_size, verbose=0):
            probabilities = softmax(logits)
            best = np.argsort(-probabilities, axis=-1, kind="stable")[:, :top_k]
            results.append([[(pieces[index], float(row[index])) for index in indices]
                            for row, indices in zip(probabilities, best)])
        return results

    # ---------------------------------------------------------------------------- helpers

    def _preprocessor_or_error(self):
        if self.preprocessor is None:
            raise errors.UserInputError("this model has no preprocessor: give it id dicts "
                                        "(input_ids, input_mask, segment_ids, "
                                        "masked_lm_positions), not text")
        return self.preprocessor

    def _features(self, x):
        """The ids and mask positions of every text (numpy), and each text's number of masks;
        a text without a mask, or with one truncated away, is refused by its index."""
        texts = preprocessor_lib.as_text_arrays(x, "x")
        if isinstance(texts, tuple):
            raise errors.UserInputError("x: the masked LM takes a list of texts, not pairs")
        counts = [text.count(MASK_TOKEN) for text in texts]
        for index, count in enumerate(counts):
            if not count:
                raise errors.UserInputError(f"x[{index}]: no {MASK_TOKEN} in {str(texts[index])!r}; "
                                            f"mark each piece to predict with {MASK_TOKEN}")
        preprocessor = self._preprocessor_or_error()
        features = preprocessor.tokenize_all(texts)
        found = (features["input_ids"] == preprocessor.mask_id).sum(axis=1)
        for index, (count, kept) in enumerate(zip(counts, found)):
            if kept != count:
                raise errors.UserInputError(
                    f"x[{index}]: {count - kept} of its {count} {MASK_TOKEN} fall past "
                    f"max_seq_length={preprocessor.max_seq_length} and are truncated away; "
                    f"shorten the text or raise max_seq_length in from_preset")
        features["masked_lm_positions"] = preprocessor.mask_positions(
            features["input_ids"]).numpy()
        return features, counts


def _check_head(preset):
    """Refuses, before anything is built, a preset whose checkpoint lacks the masked-LM head."""
    stored = {name.removeprefix(checkpoints.HUB_SCOPE)
              for name in checkpoints.list_variables(preset.checkpoint)}
    missing = [f"{HEAD_SCOPE}{name}" for name in HEAD_NAMES if HEAD_SCOPE + name not in stored]
    if missing:
        raise presets.PresetError(
            f"{preset.folder}: its checkpoint {preset.checkpoint} has no masked-LM head "
            f"(missing {missing}); fill-mask needs a pretraining checkpoint (a released one, "
            f"run_pretraining.py's output, import_from_hf.py of an AlbertForMaskedLM), not a "
            f"fine-tuned or encoder-only one")


def softmax(logits):
    """Row-wise softmax in float64 (small probabilities of a 30k vocabulary stay exact)."""
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)
