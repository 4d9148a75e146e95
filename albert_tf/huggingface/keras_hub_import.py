"""A keras-hub ALBERT preset folder (config.json naming `AlbertBackbone`, model.weights.h5, and
for a task task.json with task.weights.h5; assets/tokenizer/vocabulary.spm) → a checkpoint in
the original layout. keras-hub itself loads the preset (`<class>.from_preset`), so its own file
format is read by its own code; the variables are then renamed to the original's.

keras-hub's ALBERT is the original's architecture (tanh GELU, LayerNorm epsilon 1e-12); it
always has the E→H projection, which the original has only when E != H (it must then be the
identity). Heads: AlbertMaskedLM's `mlm_head` → cls/predictions, AlbertTextClassifier's
`logits` dense on the pooled output → output_weights/output_bias (one output: regression).
"""

import json
import os

import numpy as np

from albert_tf.config import AlbertConfig
from albert_tf.huggingface import hf_format

TASKS = {"AlbertMaskedLM": "masked_lm", "AlbertTextClassifier": "classification"}
VOCABULARY = os.path.join("assets", "tokenizer", "vocabulary.spm")
_LAYER = {"self_attention_layer/query": "attention_1/self/query",
          "self_attention_layer/key": "attention_1/self/key",
          "self_attention_layer/value": "attention_1/self/value",
          "self_attention_layer/attention_output": "attention_1/output/dense",
          "self_attention_layer_norm": "LayerNorm",
          "feedforward_intermediate_dense": "ffn_1/intermediate/dense",
          "feedforward_output_dense": "ffn_1/intermediate/output/dense",
          "feedforward_layer_norm": "LayerNorm_1"}
_TOP = {"token_embedding/embeddings": "bert/embeddings/word_embeddings",
        "position_embedding/embeddings": "bert/embeddings/position_embeddings",
        "segment_embedding/embeddings": "bert/embeddings/token_type_embeddings",
        "embeddings_layer_norm": "bert/embeddings/LayerNorm",
        "pooled_dense": "bert/pooler/dense",
        "mlm_head/intermediate_dense": "cls/predictions/transform/dense",
        "mlm_head/intermediate_layer_norm": "cls/predictions/transform/LayerNorm",
        "mlm_head/output_bias": "cls/predictions/output_bias"}


def is_preset(fields):
    """Whether config.json's fields are a keras-hub object's (rather than transformers')."""
    return isinstance(fields, dict) and str(fields.get("registered_name", "")).startswith(
        "keras_hub>")


def albert_config(fields, source):
    """Our `AlbertConfig` from an AlbertBackbone's config."""
    if fields.get("class_name") != "AlbertBackbone":
        raise hf_format.HFFormatError(f"{source}: a keras-hub {fields.get('class_name')}, "
                                      f"expected AlbertBackbone")
    backbone = fields["config"]
    return AlbertConfig.from_dict(dict(
        vocab_size=backbone["vocabulary_size"], embedding_size=backbone["embedding_dim"],
        hidden_size=backbone["hidden_dim"], num_hidden_layers=backbone["num_layers"],
        num_hidden_groups=backbone["num_groups"],
        inner_group_num=backbone["num_inner_repetitions"],
        num_attention_heads=backbone["num_heads"], intermediate_size=backbone["intermediate_dim"],
        hidden_dropout_prob=backbone["dropout"], attention_probs_dropout_prob=backbone["dropout"],
        max_position_embeddings=backbone["max_sequence_length"],
        type_vocab_size=backbone["num_segments"], hidden_act="gelu"), source)


def _original_name(path):
    """(original name, how to reshape) of a keras-hub variable path, or (None, None)."""
    scope, leaf = path.rsplit("/", 1)
    if path in _TOP or scope in _TOP:
        return (_TOP[path] if path in _TOP else f"{_TOP[scope]}/{leaf}"), None
    if scope.startswith("group_"):
        group, rest = scope.split("_inner_layer_", 1)
        inner, layer = rest.split("/", 1)
        if layer in _LAYER:
            return (f"bert/encoder/transformer/{group}/inner_group_{inner}/{_LAYER[layer]}/"
                    f"{leaf}"), "flatten"
    return None, None


def read_preset(folder, config_path, fields):
    """(config, {original name: array}, architecture, spm model path or None) of a preset."""
    import keras_hub  # a test and import dependency, pinned; only this path needs it
    config = albert_config(fields, config_path)
    task_path = os.path.join(folder, "task.json")
    architecture = "encoder"
    if os.path.exists(task_path):
        with open(task_path, encoding="utf-8") as reader:
            task_class = json.load(reader).get("class_name")
        if task_class not in TASKS:
            raise hf_format.HFFormatError(f"{task_path}: a keras-hub {task_class}, expected one "
                                          f"of {sorted(TASKS)}")
        model = getattr(keras_hub.models, task_class).from_preset(folder, preprocessor=None)
        architecture = TASKS[task_class]
    else:
        model = keras_hub.models.AlbertBackbone.from_preset(folder)
    original = {}
    hidden = config.hidden_size
    for variable in model.weights:
        value = np.asarray(variable.numpy(), np.float32)
        if variable.path.startswith("logits/"):
            name = "output_weights" if variable.path.endswith("kernel") else "output_bias"
            original[name] = value.T if name == "output_weights" else value
            continue
        if variable.path.startswith("embedding_projection/"):
            original[f"bert/encoder/embedding_hidden_mapping_in/{variable.path.split('/')[-1]}"] = value
            continue
        name, reshape = _original_name(variable.path)
        if name is None:
            raise hf_format.HFFormatError(f"{folder}: keras-hub variable {variable.path} has no "
                                          f"counterpart in the original layout")
        if reshape and name.endswith("kernel"):
            value = value.reshape(hidden, hidden) if value.ndim == 3 else value
        elif reshape:
            value = value.reshape(-1)
        original[name] = value
    if architecture == "classification" and original["output_weights"].shape[0] == 1:
        architecture = "regression"
    if config.embedding_size == config.hidden_size:
        kernel = original.pop("bert/encoder/embedding_hidden_mapping_in/kernel")
        bias = original.pop("bert/encoder/embedding_hidden_mapping_in/bias")
        if not (np.array_equal(kernel, np.eye(hidden)) and not np.any(bias)):
            raise hf_format.HFFormatError(
                f"{folder}: embedding_dim == hidden_dim but embedding_projection is not the "
                f"identity; the original layout has no such projection to hold it")
    num_labels = original["output_weights"].shape[0] if "output_weights" in original else None
    for name, value in original.items():
        if tuple(value.shape) != hf_format.expected_shape(config, name, num_labels):
            raise hf_format.HFFormatError(
                f"{folder}: {name} has shape {list(value.shape)}, config.json expects "
                f"{list(hf_format.expected_shape(config, name, num_labels))}")
    spm = os.path.join(folder, VOCABULARY)
    return config, original, architecture, spm if os.path.exists(spm) else None
