"""A Hugging Face ALBERT folder (any of transformers' ALBERT classes) → a checkpoint in the
original layout, as a fine-tuning script's --init_checkpoint.

The encoder is always taken; every head the weights hold is kept under the original's names
(`hf_format.part_table`), whatever class config.json names; a head or pooler the folder lacks is
named at INFO and left to the fine-tuning script, which initialises it as a new head (as the
original does). `architecture` overrides: "encoder" takes the encoder (and pooler) of any
folder; another architecture requires its head. Everything is read and checked before anything
is written, and the output folder appears whole (a temporary folder renamed).
"""

import json
import os
import shutil

import numpy as np
from absl import logging
from tokenizers import Tokenizer

from albert_tf import checkpoints
from albert_tf.files import io_utils
from albert_tf.huggingface import hf_format, hf_weights, keras_hub_import, spm_from_json
from albert_tf.text import tokenization

ARCHITECTURE_OF_CLASS = {name: architecture for architecture, name in hf_format.HF_CLASS.items()
                         if architecture != "regression"}
PART_NAMES = {"pooler": "pooler (bert/pooler/dense)",
              "masked_lm": "masked-LM head (cls/predictions)",
              "sop": "sentence-order head (cls/seq_relationship)",
              "classifier": "classifier head (output_weights, output_bias)",
              "squad": "span head (cls/squad)"}
LABELS_FILE = "labels.txt"


def read_config(folder):
    """(config.json's fields, its path), checked to be an ALBERT's."""
    if not os.path.isdir(folder):
        raise hf_format.HFFormatError(f"{folder}: no such folder")
    path = os.path.join(folder, "config.json")
    if not os.path.exists(path):
        raise hf_format.HFFormatError(
            f"{folder}: no config.json: expected a Hugging Face model folder (config.json with "
            f"model_type 'albert', and model.safetensors or pytorch_model.bin)")
    try:
        with open(path, encoding="utf-8") as reader:
            fields = json.load(reader)
    except ValueError as error:
        raise hf_format.HFFormatError(f"{path}: not JSON ({error})") from error
    if keras_hub_import.is_preset(fields):
        return fields, path
    if not isinstance(fields, dict) or fields.get("model_type") != "albert":
        found = fields.get("model_type") if isinstance(fields, dict) else None
        raise hf_format.HFFormatError(
            f"{path}: model_type {found!r}: expected 'albert' (this converts ALBERT models "
            f"only)")
    return fields, path


def declared_architecture(fields, config_path):
    """The architecture config.json's `architectures` names (None when it names none)."""
    names = fields.get("architectures") or []
    if not names:
        return None
    if names[0] not in ARCHITECTURE_OF_CLASS:
        raise hf_format.HFFormatError(f"{config_path}: architectures names {names[0]}, expected "
                                      f"one of {sorted(ARCHITECTURE_OF_CLASS)}")
    architecture = ARCHITECTURE_OF_CLASS[names[0]]
    if architecture == "classification" and (fields.get("problem_type") == "regression"
                                             or len(fields.get("id2label") or {}) == 1):
        return "regression"
    return architecture


def parts_to_take(present, declared, override, source):
    """(parts taken besides the encoder, parts the folder's own class has but it lacks)."""
    if override == "auto":
        wanted = set(hf_format.REQUIRED_PARTS.get(declared or "encoder", ()))
        return list(present), sorted(wanted - set(present))
    required = hf_format.REQUIRED_PARTS[override]
    absent = [part for part in required if part != "pooler" and part not in present]
    if absent:
        raise hf_format.HFFormatError(
            f"{source}: --architecture={override} needs the {PART_NAMES[absent[0]]}, which these "
            f"weights do not hold (they have: {', '.join(['encoder', *present])})")
    taken = [part for part in present if part in required or part == "pooler"]
    return taken, sorted(set(required) - set(taken))


def label_names(fields, original, architecture):
    """The classifier's label names in id order (config.json's id2label), or None."""
    if architecture not in ("classification", "token_classification") or "output_weights" not in original:
        return None
    id2label = fields.get("id2label") or {}
    count = original["output_weights"].shape[0]
    if sorted(int(key) for key in id2label) != list(range(count)):
        return None
    return [str(id2label[str(index)]) for index in range(count)]


def import_folder(folder, output_dir, architecture="auto"):
    """Writes `<output_dir>/albert_config.json`, `<output_dir>/model.ckpt-0` (the original
    layout, `global_step` 0), the folder's tokenizer files and, for a classifier with named
    labels, labels.txt; returns (checkpoint prefix, architecture)."""
    fields, config_path = read_config(folder)
    if keras_hub_import.is_preset(fields):
        return import_keras_hub_preset(folder, output_dir, config_path, fields, architecture)
    config = hf_format.albert_config_from_hf(fields, config_path)
    declared = declared_architecture(fields, config_path)
    state, source = hf_weights.read_state(folder)
    present = hf_format.parts_present(state)
    taken, lacking = parts_to_take(present, declared, architecture, source)
    original = hf_format.from_hf_state(state, config, taken, source)
    chosen = declared if architecture == "auto" else architecture
    chosen = chosen or _architecture_of_parts(taken)
    names = label_names(fields, original, chosen)
    rebuilt = _rebuilt_spm_model(folder)  # checked (or refused) before anything is written
    copies = {name: os.path.join(folder, name) for name in hf_format.TOKENIZER_FILES
              if os.path.exists(os.path.join(folder, name))}
    files = {"spiece.model": rebuilt[0]} if rebuilt else {}
    if names:
        files[LABELS_FILE] = "".join(name + "\n" for name in names).encode("utf-8")
    write_output(output_dir, config, original, copies, files)
    _log_import(source, output_dir, chosen, taken, lacking, sorted(set(present) - set(taken)),
                names)
    unknown = _unknown_tensors(state, config)
    if unknown:
        logging.warning("%s: %d tensors belong to no ALBERT part and were not imported: %s",
                        source, len(unknown), ", ".join(unknown[:8]))
    if rebuilt:
        _log_rebuilt(folder, output_dir, rebuilt)
    elif "spiece.model" not in copies:
        logging.warning("%s: no spiece.model%s; the scripts' --spm_model_file needs the "
                        "SentencePiece model this checkpoint was trained with", folder,
                        " (tokenizer.json copied)" if copies else "")
    return os.path.join(output_dir, "model.ckpt-0"), chosen


def import_keras_hub_preset(folder, output_dir, config_path, fields, architecture="auto"):
    """`import_folder` for a keras-hub preset folder (`keras_hub_import`)."""
    config, original, found, spm = keras_hub_import.read_preset(folder, config_path, fields)
    if architecture not in ("auto", found):
        if architecture != "encoder":
            raise hf_format.HFFormatError(f"{folder}: --architecture={architecture}, but the "
                                          f"preset is an {hf_format.HF_CLASS[found]}'s heads")
        original = {name: value for name, value in original.items()
                    if name.startswith("bert/")}
        found = "encoder"
    write_output(output_dir, config, original, {"spiece.model": spm} if spm else {}, {})
    logging.info("Imported the keras-hub preset %s into %s: %s", folder, output_dir,
                 ", ".join(sorted({"/".join(name.split("/")[:2]) for name in original})))
    if found == "masked_lm":
        logging.info("keras-hub's masked-LM head normalises with LayerNorm epsilon 1e-5, the "
                     "original's with 1e-12: on the same weights the head's logits differ a "
                     "little (the encoder's outputs do not)")
    if not spm:
        logging.warning("%s: no %s; the scripts' --spm_model_file needs the SentencePiece "
                        "model this checkpoint was trained with", folder,
                        keras_hub_import.VOCABULARY)
    return os.path.join(output_dir, "model.ckpt-0"), found


def write_output(output_dir, config, original, copies, files):
    """albert_config.json, model.ckpt-0 (`original` and `global_step` 0), copies of
    {name: source path} and {name: bytes}, all in a temporary folder renamed `output_dir` (which
    may exist empty; nothing is overwritten)."""
    if os.path.exists(output_dir) and os.listdir(output_dir):
        raise hf_format.HFFormatError(f"{output_dir}: already exists and is not empty (nothing "
                                      "is overwritten)")
    parent, base = os.path.split(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    temp = os.path.join(parent, f".{base}{io_utils.TEMP_MARKER}{os.getpid()}")
    os.makedirs(temp)
    try:
        config.to_json_file(os.path.join(temp, "albert_config.json"))
        checkpoints.write_checkpoint(os.path.join(temp, "model.ckpt-0"),
                                     dict(original, global_step=np.int64(0)))
        for name, source in copies.items():
            shutil.copyfile(source, os.path.join(temp, name))
        for name, content in files.items():
            with open(os.path.join(temp, name), "wb") as writer:
                writer.write(content)
        if os.path.isdir(output_dir):
            os.rmdir(output_dir)  # empty, checked above
        os.rename(temp, output_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _rebuilt_spm_model(folder):
    """(serialized SentencePiece model, do_lower_case, notes) rebuilt from the folder's
    tokenizer.json when it has no spiece.model; None otherwise."""
    tokenizer_json = os.path.join(folder, "tokenizer.json")
    if os.path.exists(os.path.join(folder, "spiece.model")) or not os.path.exists(tokenizer_json):
        return None
    try:
        return spm_from_json.build(tokenizer_json)
    except hf_format.HFFormatError as error:  # the weights still import; the reason is named
        logging.warning("No spiece.model written: %s. Pass the scripts the SentencePiece model "
                        "this checkpoint was trained with as --spm_model_file", error)
        return None


def _log_rebuilt(folder, output_dir, rebuilt):
    serialized, lower, notes = rebuilt
    sp_model = tokenization.load_sp_model(os.path.join(output_dir, "spiece.model"), serialized)
    fast = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    lines = hf_format.number_sample()
    differing = 0
    for line, encoding in zip(lines, fast.encode_batch(lines)):
        pieces = tokenization.encode_pieces(sp_model, tokenization.preprocess_text(line, lower=lower))
        differing += encoding.ids[1:-1] != [sp_model.PieceToId(piece) for piece in pieces]
    logging.info("%s: no spiece.model; wrote %s/spiece.model rebuilt from tokenizer.json (%d "
                 "pieces): pass it as --spm_model_file, with --%sdo_lower_case. Its ids differ "
                 "from tokenizer.json's on %d of %d lines of the built-in sample of numbers",
                 folder, output_dir, sp_model.GetPieceSize(), "" if lower else "no", differing,
                 len(lines))
    for note in notes:
        logging.warning("%s/tokenizer.json: %s", folder, note)


def _unknown_tensors(state, config):
    """The names of `state` that no part's table holds, but for HF's tied decoder, its
    position-id buffer and its E→H projection when E == H (the identity, checked)."""
    base = hf_format.state_base(state)
    known = {hf_name for part in ("encoder",) + hf_format.HEADS
             for _, hf_name, _ in hf_format.part_table(config, part, base)}
    extras = ("predictions.decoder.", f"{base}embeddings.position_ids",
              f"{base}encoder.embedding_hidden_mapping_in.")
    return sorted(name for name in state if name not in known and not name.startswith(extras))


def _architecture_of_parts(parts):
    """The architecture a folder without `architectures` in its config.json holds."""
    for architecture in ("pretraining", "masked_lm", "question_answering", "classification"):
        if set(hf_format.REQUIRED_PARTS[architecture]) <= set(parts):
            return architecture
    return "token_classification" if "classifier" in parts else "encoder"


def _log_import(source, output_dir, architecture, taken, lacking, left, names):
    logging.info("Imported %s (%s) into %s: the encoder%s", source,
                 hf_format.HF_CLASS[architecture], output_dir,
                 "".join(", " + PART_NAMES[part] for part in taken))
    for part in lacking:
        logging.info("%s has no %s: the fine-tuning scripts initialise it as a new head",
                     source, PART_NAMES[part])
    if "pooler" not in taken and "pooler" not in lacking:
        logging.info("%s has no %s: the fine-tuning scripts that read it (classification, "
                     "RACE) initialise it as a new head", source, PART_NAMES["pooler"])
    for part in left:
        logging.info("%s: %s not taken (--architecture)", source, PART_NAMES[part])
    if names:
        logging.info("Label names in id order (%s): %s", LABELS_FILE, ", ".join(names))
