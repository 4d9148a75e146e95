"""The TF-Hub-style ALBERT module as a TF2 SavedModel (`export_to_tfhub.py`).

The original wrote a TF1 `hub.Module`; TF2 has no such format, so this writes a reusable TF2
SavedModel carrying the original module's signatures under the same names, plus the TF2
encoder convention:

  tokens             int32 input_ids, input_mask, segment_ids [B,S]
                     → sequence_output [B,S,H], pooled_output [B,H]
  sop                same inputs → also sop_log_probs [B,2] (log_softmax of the SOP head)
  mlm                same + int32 mlm_positions [B,M] → also mlm_logits [B·M,V] (no softmax)
  tokenization_info  no inputs → vocab_file (path of the SentencePiece .model asset),
                     do_lower_case (bool)
  serving_default    int32 input_word_ids, input_mask, input_type_ids [B,S]
                     → pooled_output, sequence_output (the TF-Hub TF2 BERT/ALBERT encoder names)

Reusable SavedModel API (what `hub.KerasLayer(..., trainable=True)` uses): the loaded object has
`variables`, `trainable_variables`, `regularization_losses` (empty) and
`__call__(inputs, training=False)` on a dict of int32 `input_word_ids`, `input_mask`,
`input_type_ids` [B,S], returning `pooled_output`, `sequence_output`, `encoder_outputs` (one per
layer × inner group) and `default` (= pooled_output); training=True applies dropout.
`mlm` is the TF Hub TF2 `encoder.mlm` object: the same API (its own `variables`,
`trainable_variables` with the MLM head's, `regularization_losses`) on inputs that add int32
`masked_lm_positions` [B,M], returning also `mlm_logits` [B,M,V]; so
`hub.KerasLayer(hub.load(path).mlm, trainable=True)` fine-tunes the encoder with its MLM head.
The TF1-style `mlm` signature stays in `signatures`. Assets: the SentencePiece model and
`albert_config.json`.

Precision (`--export_precision`): `float32` (default) exports everything in float32; `bfloat16`
builds the model as the classifier's bfloat16 export does (`export.policies`: matrix products
and their weights stored in bfloat16, LayerNorm, softmax, embedding tables and the heads' output
weights in float32), with the same signatures, inputs and float32 outputs. A bfloat16 module is
an inference artefact: its `trainable_variables` (and `mlm.trainable_variables`) are empty, as
a frozen TF Hub module's, and `__call__(..., training=True)` fails with InvalidArgumentError
naming the float32 export to fine-tune instead, so `hub.KerasLayer(..., trainable=True)` fails
loudly in training rather than silently training nothing (rounding updates to bfloat16 weights
would lose most of them). Neither precision has an Einsum op (the model's projections are
reshape + MatMul: the original re-exported its v2 modules that way for TF 1.15; TFLite converts
them).
"""

import os

import tensorflow as tf
from absl import logging

from albert_tf.export import policies, pretrained, versioned

ORIGINAL_SPM_MODEL = "30k-clean.model"
EXPORT_PRECISIONS = ("float32", "bfloat16")
TRAINING_REFUSED = ("this hub module was exported with --export_precision=bfloat16 for "
                    "inference: it has no trainable variables and does not run training=True; "
                    "fine-tune a --export_precision=float32 export instead")
SEQUENCE_SPEC = tf.TensorSpec([None, None], tf.int32)


def find_spm_model(albert_directory, spm_model_file=None):
    """`spm_model_file` if given, else `30k-clean.model`, else the directory's only `*.model`."""
    if spm_model_file:
        if not tf.io.gfile.exists(spm_model_file):
            raise FileNotFoundError(f"--spm_model_file {spm_model_file} does not exist")
        return spm_model_file
    original = os.path.join(albert_directory, ORIGINAL_SPM_MODEL)
    if tf.io.gfile.exists(original):
        return original
    models = sorted(name for name in tf.io.gfile.listdir(albert_directory) if name.endswith(".model"))
    if len(models) == 1:
        return os.path.join(albert_directory, models[0])
    raise FileNotFoundError(
        f"{albert_directory}: expected the SentencePiece model {ORIGINAL_SPM_MODEL} or a single "
        f"*.model file, found {models or 'none'}; pass --spm_model_file")


def _original_inputs(names):
    return [tf.TensorSpec([None, None], tf.int32, name=name) for name in names]


class _HubFunctions:
    """The functions saved on the SavedModel root, closing over one `AlbertPretrainingModel`."""

    def __init__(self, model, vocab_asset, do_lower_case, fine_tunable=True):
        """`fine_tunable` false: `call` refuses training=True (TRAINING_REFUSED)."""
        self.model = model
        self.vocab_asset = vocab_asset
        self.do_lower_case = do_lower_case
        self.fine_tunable = fine_tunable

    def encode(self, input_ids, input_mask, segment_ids, training=False):
        return self.model.encoder(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=training)

    def tokens(self, input_ids, input_mask, segment_ids):
        outputs = self.encode(input_ids, input_mask, segment_ids)
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    def sop(self, input_ids, input_mask, segment_ids):
        result = self.tokens(input_ids, input_mask, segment_ids)
        logits = self.model.sop_head(result["pooled_output"])
        result["sop_log_probs"] = tf.nn.log_softmax(logits, axis=-1)
        return result

    def mlm(self, input_ids, input_mask, segment_ids, mlm_positions):
        result = self.tokens(input_ids, input_mask, segment_ids)
        logits = self.model.mlm_head(result["sequence_output"], mlm_positions)
        result["mlm_logits"] = tf.reshape(logits, [-1, self.model.config.vocab_size])
        return result

    def tokenization_info(self):
        return {"vocab_file": self.vocab_asset.asset_path,
                "do_lower_case": tf.constant(self.do_lower_case)}

    def serving_default(self, input_word_ids, input_mask, input_type_ids):
        outputs = self.encode(input_word_ids, input_mask, input_type_ids)
        return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"]}

    def call(self, inputs, training=False):
        if training and not self.fine_tunable:
            # Assert is stateful: the traced function runs it, whichever output is read.
            tf.debugging.Assert(False, [TRAINING_REFUSED])
            training = False
        outputs = self.encode(inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"],
                              training=training)
        return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"],
                "encoder_outputs": outputs["encoder_outputs"], "default": outputs["pooled_output"]}

    def call_mlm(self, inputs, training=False):
        outputs = self.call(inputs, training=training)
        outputs["mlm_logits"] = self.model.mlm_head(outputs["sequence_output"],
                                                    inputs["masked_lm_positions"])
        return outputs


def _reusable(function, spec, variables, trainable_variables):
    """A trackable with the reusable SavedModel API (`__call__(inputs, training)`, variables,
    trainable_variables, regularization_losses), as `hub.KerasLayer` expects."""
    obj = tf.__internal__.tracking.AutoTrackable()
    obj.variables = variables
    obj.trainable_variables = trainable_variables
    obj.regularization_losses = []
    call = tf.function(function)
    for training in (False, True):
        call.get_concrete_function(spec, training=training)
    obj.__call__ = call
    return obj


def build_hub_root(model, spm_model_file, config_file, do_lower_case, fine_tunable=True):
    """The trackable root to save: variables, assets, `__call__` and the signature functions;
    `fine_tunable` false (a bfloat16 module): no trainable variables, training=True refused."""
    root = tf.__internal__.tracking.AutoTrackable()  # what Keras' own ExportArchive saves
    root.vocab_file = tf.saved_model.Asset(spm_model_file)
    root.config_file = tf.saved_model.Asset(config_file)
    functions = _HubFunctions(model, root.vocab_file, bool(do_lower_case), fine_tunable)
    root.variables = [variable.value for variable in model.weights]
    root.trainable_variables = [variable.value for variable in model.encoder.trainable_weights
                                if fine_tunable]
    root.regularization_losses = []
    weights = {id(variable) for variable in model.weights}
    root.dropout_seed_states = [variable.value for variable in model.variables if id(variable) not in weights]

    call = tf.function(functions.call)
    call_spec = {"input_word_ids": SEQUENCE_SPEC, "input_mask": SEQUENCE_SPEC, "input_type_ids": SEQUENCE_SPEC}
    for training in (False, True):
        call.get_concrete_function(call_spec, training=training)
    root.__call__ = call
    encoder_weights = {id(variable) for variable in model.encoder.trainable_weights}
    root.mlm = _reusable(
        functions.call_mlm, dict(call_spec, masked_lm_positions=SEQUENCE_SPEC), root.variables,
        root.trainable_variables + [variable.value for variable in model.mlm_head.trainable_weights
                                    if fine_tunable and id(variable) not in encoder_weights])

    three = ("input_ids", "input_mask", "segment_ids")
    signatures = {
        "tokens": tf.function(functions.tokens, input_signature=_original_inputs(three)),
        "sop": tf.function(functions.sop, input_signature=_original_inputs(three)),
        "mlm": tf.function(functions.mlm, input_signature=_original_inputs(three + ("mlm_positions",))),
        "tokenization_info": tf.function(functions.tokenization_info, input_signature=[]),
        "serving_default": tf.function(functions.serving_default, input_signature=_original_inputs(
            ("input_word_ids", "input_mask", "input_type_ids"))),
    }
    for name, function in signatures.items():
        if name != "mlm":  # the attribute is the TF2 `encoder.mlm` object
            setattr(root, name, function)
    return root, {name: function.get_concrete_function() for name, function in signatures.items()}


def export_hub_module(albert_directory, export_path, checkpoint_name="model.ckpt-best",
                      do_lower_case=True, spm_model_file=None, export_precision="float32"):
    """Loads `<albert_directory>/<checkpoint_name>` and writes the SavedModel to `export_path`
    at `export_precision` (EXPORT_PRECISIONS).

    Written under a temporary name beside `export_path` and renamed when complete; an existing
    `export_path` is an error (nothing is overwritten).
    """
    policies.check_export_precision(export_precision, EXPORT_PRECISIONS, " for the hub module")
    if tf.io.gfile.exists(export_path):
        raise FileExistsError(f"--export_path {export_path} already exists; choose a new directory")
    spm_model_file = find_spm_model(albert_directory, spm_model_file)
    with policies.model_policy(export_precision):
        _, model, _ = pretrained.load_pretraining_model(albert_directory, checkpoint_name)
    root, signatures = build_hub_root(
        model, spm_model_file, os.path.join(albert_directory, pretrained.CONFIG_FILENAME),
        do_lower_case, fine_tunable=export_precision == "float32")
    parent = os.path.dirname(os.path.abspath(export_path))
    tf.io.gfile.makedirs(parent)
    versioned.remove_killed_temporaries(parent)
    temp = versioned.temporary_path(parent)
    try:
        tf.saved_model.save(root, temp, signatures=signatures)
        tf.io.gfile.rename(temp, export_path)
    finally:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.rmtree(temp)
    logging.info("Exported the %s hub SavedModel to %s (signatures %s)", export_precision,
                 export_path, sorted(signatures))
    return export_path
