"""Checkpoints in the original layout ↔ Hugging Face model folders (config.json,
model.safetensors, spiece.model, tokenizer.json), with no PyTorch or transformers needed on
either side.

Transformers 5 no longer reads the original TF layout (`load_tf_weights_in_albert` is gone), so
the names are mapped here, from the original's variable table: dense kernels are [in, out] in
the original and [out, in] in PyTorch; the classifier heads' `output_weights` are [labels, H] in
both. HF always has the E→H projection `embedding_hidden_mapping_in`; the original has none
when embedding_size == hidden_size, so the export writes the identity (exact) and the import
requires it to be the identity.

Architectures (the head a checkpoint holds):
  pretraining          cls/predictions + cls/seq_relationship   AlbertForPreTraining
  classification       output_weights [labels >= 2, H]          AlbertForSequenceClassification
  regression           output_weights [1, H] (sts-b)            AlbertForSequenceClassification
  multiple_choice      output_weights [1, H] (RACE)             AlbertForMultipleChoice
  question_answering   cls/squad/output_weights [2, H] (v1.1)   AlbertForQuestionAnswering
  encoder              the encoder and pooler only              AlbertModel
The original's SQuAD v2.0 head (XLNet-style start/end beams and an answer classifier) has no
Hugging Face counterpart and is refused.
"""

import json
import os
import shutil

import numpy as np
from absl import logging
from safetensors import numpy as safetensors_numpy
import tensorflow as tf
from tokenizers import Tokenizer

from albert_tf import checkpoints, errors
from albert_tf.files import io_utils
from albert_tf.huggingface import exact
from albert_tf.huggingface.exact import digit_comma, unigram_search
from albert_tf.text import hf_tokenizer, tokenization
from albert_tf.config import AlbertConfig

TOKENIZER_FILES = ("spiece.model", "tokenizer.json")
EXACT_TOKENIZER_FILES = ("tokenization_albert_tf.py", "digit_comma.py", "unigram_search.py")
EXACT_TOKENIZER_CLASS = "tokenization_albert_tf.AlbertTfTokenizerFast"
HF_CLASS = {"pretraining": "AlbertForPreTraining",
            "classification": "AlbertForSequenceClassification",
            "regression": "AlbertForSequenceClassification",
            "multiple_choice": "AlbertForMultipleChoice",
            "question_answering": "AlbertForQuestionAnswering",
            "encoder": "AlbertModel"}
ARCHITECTURES = tuple(HF_CLASS)
# The original's activations by HF's names: its "gelu" is the tanh approximation.
HF_ACTIVATION = {"gelu": "gelu_new", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_LAYER = {  # original suffix in group_G/inner_group_I → HF suffix in albert_layer_groups.G.albert_layers.I
    "attention_1/self/query": "attention.query", "attention_1/self/key": "attention.key",
    "attention_1/self/value": "attention.value", "attention_1/output/dense": "attention.dense",
    "LayerNorm": "attention.LayerNorm", "ffn_1/intermediate/dense": "ffn",
    "ffn_1/intermediate/output/dense": "ffn_output", "LayerNorm_1": "full_layer_layer_norm",
}


class HFFormatError(errors.UserInputError):
    """A checkpoint or HF folder that cannot be converted; the message names it and why."""


def name_table(config, architecture):
    """[(original name, HF name, transposed)] for every variable of `architecture`."""
    base = "" if architecture == "encoder" else "albert."
    table = []

    def dense(original, hf_name):
        table.extend([(original + "/kernel", hf_name + ".weight", True),
                      (original + "/bias", hf_name + ".bias", False)])

    def norm(original, hf_name):
        table.extend([(original + "/gamma", hf_name + ".weight", False),
                      (original + "/beta", hf_name + ".bias", False)])

    for kind in ("word", "token_type", "position"):
        table.append((f"bert/embeddings/{kind}_embeddings",
                      f"{base}embeddings.{kind}_embeddings.weight", False))
    norm("bert/embeddings/LayerNorm", f"{base}embeddings.LayerNorm")
    if config.embedding_size != config.hidden_size:
        dense("bert/encoder/embedding_hidden_mapping_in", f"{base}encoder.embedding_hidden_mapping_in")
    for group in range(config.num_hidden_groups):
        for inner in range(config.inner_group_num):
            scope = f"bert/encoder/transformer/group_{group}/inner_group_{inner}/"
            hf_scope = f"{base}encoder.albert_layer_groups.{group}.albert_layers.{inner}."
            for original, hf_name in _LAYER.items():
                (norm if original.startswith("LayerNorm") else dense)(scope + original,
                                                                      hf_scope + hf_name)
    dense("bert/pooler/dense", f"{base}pooler")
    if architecture == "pretraining":
        dense("cls/predictions/transform/dense", "predictions.dense")
        norm("cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
        table.extend([("cls/predictions/output_bias", "predictions.bias", False),
                      ("cls/seq_relationship/output_weights", "sop_classifier.classifier.weight", False),
                      ("cls/seq_relationship/output_bias", "sop_classifier.classifier.bias", False)])
    elif architecture in ("classification", "regression", "multiple_choice"):
        table.extend([("output_weights", "classifier.weight", False),
                      ("output_bias", "classifier.bias", False)])
    elif architecture == "question_answering":
        table.extend([("cls/squad/output_weights", "qa_outputs.weight", False),
                      ("cls/squad/output_bias", "qa_outputs.bias", False)])
    return table


def _projection_name(architecture):
    return ("" if architecture == "encoder" else "albert.") + "encoder.embedding_hidden_mapping_in"


def to_hf_state(original, config, architecture):
    """{HF name: array} from {original name: array}."""
    missing = [name for name, _, _ in name_table(config, architecture) if name not in original]
    if missing:
        raise HFFormatError(f"the checkpoint has no {missing[:5]} (is it a {architecture} "
                            f"checkpoint of this config?)")
    state = {hf_name: np.ascontiguousarray(original[name].T if transposed else original[name])
             for name, hf_name, transposed in name_table(config, architecture)}
    if config.embedding_size == config.hidden_size:  # the original has no projection: identity
        state[_projection_name(architecture) + ".weight"] = np.eye(config.hidden_size, dtype=np.float32)
        state[_projection_name(architecture) + ".bias"] = np.zeros(config.hidden_size, np.float32)
    return state


def from_hf_state(state, config, architecture, source):
    """{original name: array} from an HF state dict (`source` names it in errors)."""
    missing = [hf_name for _, hf_name, _ in name_table(config, architecture) if hf_name not in state]
    if missing:
        raise HFFormatError(f"{source}: no {missing[:5]} (is it an {HF_CLASS[architecture]}?)")
    if config.embedding_size == config.hidden_size:
        weight = state.get(_projection_name(architecture) + ".weight")
        bias = state.get(_projection_name(architecture) + ".bias")
        if weight is not None and not (np.array_equal(weight, np.eye(config.hidden_size))
                                       and not np.any(bias)):
            raise HFFormatError(
                f"{source}: embedding_size == hidden_size but embedding_hidden_mapping_in is not "
                "the identity; the original layout has no such projection to hold it")
    return {name: np.ascontiguousarray(state[hf_name].T if transposed else state[hf_name])
            for name, hf_name, transposed in name_table(config, architecture)}


def detect_architecture(names_to_shapes, source):
    """The architecture of a checkpoint from its variable names (see the module docstring)."""
    if "cls/predictions/output_bias" in names_to_shapes:
        return "pretraining"
    if "cls/squad/output_weights" in names_to_shapes:
        return "question_answering"
    if any(name.startswith(("start_logits/", "answer_class/")) for name in names_to_shapes):
        raise HFFormatError(f"{source}: the original's SQuAD v2.0 head has no Hugging Face "
                            "counterpart (AlbertForQuestionAnswering is the v1.1 span head)")
    if "output_weights" in names_to_shapes:
        if names_to_shapes["output_weights"][0] > 1:
            return "classification"
        raise HFFormatError(f"{source}: a one-output head is either regression (sts-b) or "
                            "multiple choice (RACE): pass --architecture")
    return "encoder"


def hf_config(config, architecture, num_labels=None, label_names=None):
    """config.json for `transformers.AlbertConfig` (written without transformers)."""
    if config.hidden_act not in HF_ACTIVATION:
        raise HFFormatError(f"hidden_act {config.hidden_act!r} has no Hugging Face name")
    fields = dict(
        model_type="albert", architectures=[HF_CLASS[architecture]],
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, inner_group_num=config.inner_group_num,
        hidden_act=HF_ACTIVATION[config.hidden_act], hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range,
        layer_norm_eps=1e-12, classifier_dropout_prob=0.1, position_embedding_type="absolute",
        pad_token_id=0, bos_token_id=2, eos_token_id=3, torch_dtype="float32")
    if architecture in ("classification", "regression"):
        count = 1 if architecture == "regression" else num_labels
        names = label_names or [f"LABEL_{index}" for index in range(count)]
        fields["id2label"] = {str(index): str(name) for index, name in enumerate(names)}
        fields["label2id"] = {str(name): index for index, name in enumerate(names)}
        if architecture == "regression":
            fields["problem_type"] = "regression"
    return fields


def albert_config_from_hf(fields, source):
    """Our `AlbertConfig` from an HF config.json's fields."""
    activation = {hf: ours for ours, hf in HF_ACTIVATION.items()}.get(fields.get("hidden_act"))
    if activation is None:
        raise HFFormatError(f"{source}: hidden_act {fields.get('hidden_act')!r} is not one of the "
                            f"original's ({', '.join(HF_ACTIVATION.values())})")
    if abs(fields.get("layer_norm_eps", 1e-12) - 1e-12) > 1e-15:
        raise HFFormatError(f"{source}: layer_norm_eps {fields['layer_norm_eps']} differs from "
                            "the original's fixed 1e-12")
    keys = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
            "num_hidden_groups", "num_attention_heads", "intermediate_size", "inner_group_num",
            "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
            "type_vocab_size", "initializer_range")
    values = {key: fields[key] for key in keys if key in fields}
    return AlbertConfig.from_dict(dict(values, hidden_act=activation), source)


def write_tokenizer_files(spm_model_file, do_lower_case, max_length, directory):
    """spiece.model, tokenizer.json (the original's tokenization, see `hf_tokenizer`) and the
    tokenizer config. The config names `PreTrainedTokenizerFast`, which uses tokenizer.json as
    it is: transformers 5's `AlbertTokenizer` would rebuild its own pipeline from the vocabulary
    (and its own ALBERT normalisation, which differs from the original's), and would not return
    the segment ids (`token_type_ids`) of a pair. With `trust_remote_code=True`, `AutoTokenizer`
    loads the copied `albert_tf.huggingface.exact` files instead: SentencePiece's own float32
    search and the digit-comma rule over tokenizer.json's normaliser and ids, exact."""
    hf_tokenizer.write(spm_model_file, os.path.join(directory, "tokenizer.json"), do_lower_case)
    shutil.copyfile(spm_model_file, os.path.join(directory, "spiece.model"))
    for name in EXACT_TOKENIZER_FILES:
        shutil.copyfile(os.path.join(os.path.dirname(exact.__file__), name),
                        os.path.join(directory, name))
    special = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>",
               "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
               "mask_token": "[MASK]"}
    user_defined, control = hf_tokenizer.search_piece_lists(
        hf_tokenizer.read_model_proto(spm_model_file))
    tokenizer = dict(special, tokenizer_class="PreTrainedTokenizerFast",
                     auto_map={"AutoTokenizer": [None, EXACT_TOKENIZER_CLASS]},
                     user_defined_pieces=user_defined, control_pieces=control,
                     do_lower_case=do_lower_case, remove_space=True, keep_accents=False,
                     model_max_length=max_length,
                     model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    for name, content in (("tokenizer_config.json", tokenizer), ("special_tokens_map.json", special)):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as writer:
            json.dump(content, writer, indent=2)


def number_sample():
    """Lines of numbers with commas, where tokenizer.json can differ from the original (the
    digit-comma rule): the sample `tokenizer_differences` counts on by default."""
    return [f"in {n}, {n:,} or {n * 1009:,}, {n % 97},{n % 1000:03d} and {n / 8:,.2f},"
            for n in range(1, 4000, 3)]


def tokenizer_differences(folder, spm_model_file, do_lower_case, lines):
    """(lines whose ids differ from the original tokenization through the folder's
    tokenizer.json, through the exact path (`trust_remote_code=True`)), counted on `lines`."""
    full = tokenization.FullTokenizer(None, do_lower_case, spm_model_file)
    expected = [[2] + full.convert_tokens_to_ids(
        full.tokenize(tokenization.preprocess_text(line, lower=do_lower_case))) + [3]
        for line in lines]
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as reader:
        settings = json.load(reader)
    fast = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    exact = digit_comma.exact_tokenizer(fast, unigram_search.UnigramSearch.of(
        fast, settings["user_defined_pieces"], settings["control_pieces"]))
    counts = []
    for tokenizer in (fast, exact):
        encodings = tokenizer.encode_batch(lines)
        counts.append(sum(encoding.ids != ids for encoding, ids in zip(encodings, expected)))
    return tuple(counts)


def export_folder(config, checkpoint_path, output_dir, architecture="auto", spm_model_file=None,
                  do_lower_case=True, label_names=None):
    """Writes the HF folder `output_dir` (atomically: a temporary folder renamed); returns the
    architecture written."""
    prefix = checkpoints.resolve_checkpoint(checkpoint_path)
    shapes = checkpoints.list_variables(prefix)
    if architecture == "auto":
        architecture = detect_architecture(shapes, prefix)
    reader = tf.train.load_checkpoint(prefix)
    original = {name: reader.get_tensor(name) for name, _, _ in name_table(config, architecture)
                if name in shapes}
    state = to_hf_state(original, config, architecture)
    num_labels = shapes["output_weights"][0] if "output_weights" in shapes else None
    if label_names is not None and num_labels is not None and len(label_names) != num_labels:
        raise HFFormatError(f"{len(label_names)} label names for a head of {num_labels} outputs")
    if tf.io.gfile.exists(output_dir):
        raise HFFormatError(f"{output_dir}: already exists (nothing is overwritten)")
    parent, base = os.path.split(os.path.abspath(output_dir))
    temp = os.path.join(parent, f".{base}{io_utils.TEMP_MARKER}{os.getpid()}")
    os.makedirs(temp)
    try:
        safetensors_numpy.save_file(state, os.path.join(temp, "model.safetensors"),
                                    metadata={"format": "pt"})
        with open(os.path.join(temp, "config.json"), "w", encoding="utf-8") as writer:
            json.dump(hf_config(config, architecture, num_labels, label_names), writer, indent=2)
        if spm_model_file:
            write_tokenizer_files(spm_model_file, do_lower_case, config.max_position_embeddings,
                                  temp)
        os.rename(temp, output_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return architecture


def _read_state(folder):
    safetensors_path = os.path.join(folder, "model.safetensors")
    if os.path.exists(safetensors_path):
        return safetensors_numpy.load_file(safetensors_path)
    torch_path = os.path.join(folder, "pytorch_model.bin")
    if os.path.exists(torch_path):
        try:
            import torch
        except ImportError as error:
            raise HFFormatError(f"{torch_path}: reading PyTorch weights needs torch installed "
                                "(or convert the folder to model.safetensors)") from error
        return {name: tensor.numpy() for name, tensor in
                torch.load(torch_path, map_location="cpu", weights_only=True).items()}
    raise HFFormatError(f"{folder}: neither model.safetensors nor pytorch_model.bin")


def import_folder(folder, output_dir, architecture="auto"):
    """Writes `<output_dir>/albert_config.json` and `<output_dir>/model.ckpt-0` (the original
    layout, `global_step` 0) from an HF ALBERT folder, and copies whichever of spiece.model and
    tokenizer.json it has (transformers 5 saves only tokenizer.json); returns (checkpoint
    prefix, architecture)."""
    config_path = os.path.join(folder, "config.json")
    if not os.path.exists(config_path):
        raise HFFormatError(f"{folder}: no config.json (not a Hugging Face model folder)")
    with open(config_path, encoding="utf-8") as reader:
        fields = json.load(reader)
    if fields.get("model_type") != "albert":
        raise HFFormatError(f"{config_path}: model_type {fields.get('model_type')!r}, not 'albert'")
    config = albert_config_from_hf(fields, config_path)
    if architecture == "auto":
        hf_class = (fields.get("architectures") or ["AlbertModel"])[0]
        by_class = {name: arch for arch, name in HF_CLASS.items() if arch != "regression"}
        if hf_class not in by_class:
            raise HFFormatError(f"{config_path}: architecture {hf_class} is not one of "
                                f"{sorted(by_class)}")
        architecture = by_class[hf_class]
    state = _read_state(folder)
    if architecture != "encoder" and not any(name.startswith("albert.") for name in state):
        state = {f"albert.{name}": value for name, value in state.items()}
    original = from_hf_state(state, config, architecture, folder)
    original["global_step"] = np.int64(0)
    tf.io.gfile.makedirs(output_dir)
    config.to_json_file(os.path.join(output_dir, "albert_config.json"))
    prefix = checkpoints.write_checkpoint(os.path.join(output_dir, "model.ckpt-0"), original)
    copied = [name for name in TOKENIZER_FILES if os.path.exists(os.path.join(folder, name))]
    for name in copied:
        shutil.copyfile(os.path.join(folder, name), os.path.join(output_dir, name))
    if "spiece.model" not in copied:
        logging.warning("%s: no spiece.model%s; the scripts' --spm_model_file needs the "
                        "SentencePiece model this checkpoint was trained with", folder,
                        " (tokenizer.json copied)" if copied else "")
    return prefix, architecture
