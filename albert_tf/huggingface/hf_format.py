"""Checkpoints in the original layout ↔ Hugging Face model folders (config.json,
model.safetensors, spiece.model, tokenizer.json), with no PyTorch or transformers needed on
either side.

Transformers 5 no longer reads the original TF layout (`load_tf_weights_in_albert` is gone), so
the names are mapped here, from the original's variable table: dense kernels are [in, out] in
the original and [out, in] in PyTorch; the classifier heads' `output_weights` are [labels, H] in
both. HF always has the E→H projection `embedding_hidden_mapping_in`; the original has none
when embedding_size == hidden_size, so the export writes the identity (exact) and the import
requires it to be the identity.

Architectures (the heads a checkpoint holds; the pooler `bert/pooler/dense` is kept whenever
the checkpoint has it, and required only where the head reads it):
  pretraining            cls/predictions + cls/seq_relationship + pooler   AlbertForPreTraining
  masked_lm              cls/predictions                                   AlbertForMaskedLM
  classification         output_weights [labels >= 2, H] + pooler          AlbertForSequenceClassification
  regression             output_weights [1, H] (sts-b) + pooler            AlbertForSequenceClassification
  multiple_choice        output_weights [1, H] (RACE) + pooler             AlbertForMultipleChoice
  token_classification   output_weights [labels, H] (tagging)              AlbertForTokenClassification
  question_answering     cls/squad/output_weights [2, H] (v1.1)            AlbertForQuestionAnswering
  encoder                the encoder alone                                 AlbertModel
The original's SQuAD v2.0 head (XLNet-style start/end beams and an answer classifier) has no
Hugging Face counterpart and is refused.
"""

import json
import os
import shutil

import numpy as np
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
            "masked_lm": "AlbertForMaskedLM",
            "classification": "AlbertForSequenceClassification",
            "regression": "AlbertForSequenceClassification",
            "multiple_choice": "AlbertForMultipleChoice",
            "token_classification": "AlbertForTokenClassification",
            "question_answering": "AlbertForQuestionAnswering",
            "encoder": "AlbertModel"}
ARCHITECTURES = tuple(HF_CLASS)
# The parts besides the encoder that each architecture needs; a pooler is kept where it is not.
HEADS = ("pooler", "masked_lm", "sop", "classifier", "squad")
REQUIRED_PARTS = {"pretraining": ("pooler", "masked_lm", "sop"), "masked_lm": ("masked_lm",),
                  "classification": ("pooler", "classifier"),
                  "regression": ("pooler", "classifier"),
                  "multiple_choice": ("pooler", "classifier"),
                  "token_classification": ("classifier",), "question_answering": ("squad",),
                  "encoder": ()}
POOLER = "bert/pooler/dense"
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


def part_table(config, part, base="albert."):
    """[(original name, HF name, transposed)] of one part: "encoder" (embeddings, projection,
    transformer), "pooler", or a head (`HEADS`). `base` prefixes the encoder's and pooler's HF
    names ("" in an AlbertModel)."""
    table = []

    def dense(original, hf_name):
        table.extend([(original + "/kernel", hf_name + ".weight", True),
                      (original + "/bias", hf_name + ".bias", False)])

    def norm(original, hf_name):
        table.extend([(original + "/gamma", hf_name + ".weight", False),
                      (original + "/beta", hf_name + ".bias", False)])

    def output(original, hf_name):
        table.extend([(original + "output_weights", hf_name + ".weight", False),
                      (original + "output_bias", hf_name + ".bias", False)])

    if part == "encoder":
        for kind in ("word", "token_type", "position"):
            table.append((f"bert/embeddings/{kind}_embeddings",
                          f"{base}embeddings.{kind}_embeddings.weight", False))
        norm("bert/embeddings/LayerNorm", f"{base}embeddings.LayerNorm")
        if config.embedding_size != config.hidden_size:
            dense("bert/encoder/embedding_hidden_mapping_in", _projection_name(base))
        for group in range(config.num_hidden_groups):
            for inner in range(config.inner_group_num):
                scope = f"bert/encoder/transformer/group_{group}/inner_group_{inner}/"
                hf_scope = f"{base}encoder.albert_layer_groups.{group}.albert_layers.{inner}."
                for original, hf_name in _LAYER.items():
                    (norm if original.startswith("LayerNorm") else dense)(scope + original,
                                                                          hf_scope + hf_name)
    elif part == "pooler":
        dense(POOLER, f"{base}pooler")
    elif part == "masked_lm":
        dense("cls/predictions/transform/dense", "predictions.dense")
        norm("cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
        table.append(("cls/predictions/output_bias", "predictions.bias", False))
    elif part == "sop":
        output("cls/seq_relationship/", "sop_classifier.classifier")
    elif part == "classifier":
        output("", "classifier")
    elif part == "squad":
        output("cls/squad/", "qa_outputs")
    else:
        raise ValueError(part)
    return table


def hf_base(architecture):
    """The HF prefix of the encoder's names: none in an AlbertModel."""
    return "" if architecture == "encoder" else "albert."


def name_table(config, architecture, pooler=True):
    """[(original name, HF name, transposed)] for every variable of `architecture` (with the
    pooler unless `pooler` is False and the architecture does without)."""
    parts = ["encoder"] + list(REQUIRED_PARTS[architecture])
    if pooler and "pooler" not in parts:
        parts.insert(1, "pooler")
    return [entry for part in parts for entry in part_table(config, part, hf_base(architecture))]


def _projection_name(base):
    return base + "encoder.embedding_hidden_mapping_in"


def expected_shape(config, name, num_labels=None):
    """The shape of original variable `name` under `config` (None where a dimension is the
    head's own: the classifier's label count when `num_labels` is None)."""
    vocab, embedding, hidden = config.vocab_size, config.embedding_size, config.hidden_size
    intermediate = config.intermediate_size
    fixed = {"bert/embeddings/word_embeddings": (vocab, embedding),
             "bert/embeddings/token_type_embeddings": (config.type_vocab_size, embedding),
             "bert/embeddings/position_embeddings": (config.max_position_embeddings, embedding),
             "bert/encoder/embedding_hidden_mapping_in/kernel": (embedding, hidden),
             "cls/predictions/transform/dense/kernel": (hidden, embedding),
             "cls/predictions/output_bias": (vocab,),
             "output_weights": (num_labels, hidden), "output_bias": (num_labels,)}
    if name in fixed:
        return fixed[name]
    if name.startswith(("bert/embeddings/", "cls/predictions/transform/")):
        return (embedding,)  # LayerNorms and the transform's bias, all of size E
    if name.startswith(("cls/seq_relationship/", "cls/squad/")):
        return (2, hidden) if name.endswith("output_weights") else (2,)
    if name.endswith("ffn_1/intermediate/dense/kernel"):
        return (hidden, intermediate)
    if name.endswith("ffn_1/intermediate/dense/bias"):
        return (intermediate,)
    if name.endswith("ffn_1/intermediate/output/dense/kernel"):
        return (intermediate, hidden)
    return (hidden, hidden) if name.endswith("kernel") else (hidden,)


def to_hf_state(original, config, architecture):
    """{HF name: array} from {original name: array} (the pooler when `original` has it)."""
    table = name_table(config, architecture, pooler=POOLER + "/kernel" in original)
    missing = [name for name, _, _ in table if name not in original]
    if missing:
        raise HFFormatError(f"the checkpoint has no {missing[:5]} (is it a {architecture} "
                            f"checkpoint of this config?)")
    state = {hf_name: np.ascontiguousarray(original[name].T if transposed else original[name])
             for name, hf_name, transposed in table}
    if config.embedding_size == config.hidden_size:  # the original has no projection: identity
        projection = _projection_name(hf_base(architecture))
        state[projection + ".weight"] = np.eye(config.hidden_size, dtype=np.float32)
        state[projection + ".bias"] = np.zeros(config.hidden_size, np.float32)
    return state


def state_base(state):
    """The encoder's prefix in an HF state dict: "albert." under a head, none in an AlbertModel."""
    return "albert." if any(name.startswith("albert.") for name in state) else ""


def parts_present(state):
    """The parts besides the encoder (`HEADS`) whose first tensor an HF state dict holds."""
    base = state_base(state)
    return [part for part in HEADS if part_table(None, part, base)[0][1] in state]


def from_hf_state(state, config, parts, source):
    """{original name: array} of the encoder and `parts` (or an architecture's parts and its
    pooler when present, given an architecture name) from an HF state dict; a missing tensor
    or one whose shape disagrees with the config is an error naming `source` (the weights
    file) and what was expected."""
    if isinstance(parts, str):
        parts = sorted(set(REQUIRED_PARTS[parts]) | ({"pooler"} & set(parts_present(state))))
    base = state_base(state)
    table = [entry for part in ["encoder"] + list(parts)
             for entry in part_table(config, part, base)]
    missing = [hf_name for _, hf_name, _ in table if hf_name not in state]
    if missing:
        raise HFFormatError(f"{source}: no tensor {missing[0]}"
                            + (f" (nor {len(missing) - 1} more: {missing[1:4]}...)"
                               if len(missing) > 1 else "")
                            + f": expected an ALBERT with {', '.join(['encoder', *parts])}")
    original = {name: np.ascontiguousarray(state[hf_name].T if transposed else state[hf_name])
                for name, hf_name, transposed in table}
    if config.embedding_size == config.hidden_size:
        weight = state.get(_projection_name(base) + ".weight")
        bias = state.get(_projection_name(base) + ".bias")
        if weight is not None and not (np.array_equal(weight, np.eye(config.hidden_size))
                                       and not np.any(bias)):
            raise HFFormatError(
                f"{source}: embedding_size == hidden_size but embedding_hidden_mapping_in is not "
                "the identity; the original layout has no such projection to hold it")
    num_labels = original["output_weights"].shape[0] if "output_weights" in original else None
    for name, hf_name, transposed in table:
        shape = tuple(original[name].shape)
        expected = expected_shape(config, name, num_labels)
        if shape != expected:
            hf_expected = expected[::-1] if transposed else expected
            raise HFFormatError(
                f"{source}: tensor {hf_name} has shape {list(state[hf_name].shape)}; the "
                f"config (vocab_size {config.vocab_size}, embedding_size "
                f"{config.embedding_size}, hidden_size {config.hidden_size}, intermediate_size "
                f"{config.intermediate_size}) expects {list(hf_expected)}")
    return original


def detect_architecture(names_to_shapes, source):
    """The architecture of a checkpoint from its variable names (see the module docstring)."""
    if "cls/predictions/output_bias" in names_to_shapes:
        return ("pretraining" if "cls/seq_relationship/output_weights" in names_to_shapes
                else "masked_lm")
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
    # (a tagging head has the classifier's names: --architecture=token_classification)
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
    if architecture in ("classification", "regression", "token_classification"):
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
