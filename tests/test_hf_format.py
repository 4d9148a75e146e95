"""Hugging Face model folders ↔ checkpoints in the original layout (`albert_tf.huggingface.hf_format`,
export_to_hf.py, import_from_hf.py), checked against transformers itself: the exported folder
loads with `AutoModel*.from_pretrained` and gives our outputs, and a folder transformers wrote
imports into a checkpoint our models load with its outputs."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from albert_tf import checkpoints
from albert_tf.huggingface import hf_format, hf_import
from albert_tf.text import tokenization
from albert_tf.config import AlbertConfig
from albert_tf.modeling import classifier, encoder, multiple_choice, pretraining, squad_heads
from tests.conftest import REPO_ROOT, brown_config

pytestmark = pytest.mark.slow
TOLERANCE = 1e-4
SIZES = {"e_ne_h": dict(embedding_size=16, hidden_size=32, num_hidden_layers=3,
                        num_hidden_groups=1, inner_group_num=1),
         "e_eq_h_groups": dict(embedding_size=32, hidden_size=32, num_hidden_layers=4,
                               num_hidden_groups=2, inner_group_num=2)}
HF_AUTO = {"pretraining": transformers.AlbertForPreTraining,
           "classification": transformers.AutoModelForSequenceClassification,
           "regression": transformers.AutoModelForSequenceClassification,
           "multiple_choice": transformers.AutoModelForMultipleChoice,
           "question_answering": transformers.AutoModelForQuestionAnswering,
           "encoder": transformers.AutoModel}


def make_config(size):
    return AlbertConfig(vocab_size=97, num_attention_heads=4, intermediate_size=37,
                        max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu",
                        **SIZES[size])


def our_model(config, architecture):
    if architecture == "pretraining":
        return pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    if architecture in ("classification", "regression"):
        return classifier.AlbertClassifier(encoder.AlbertEncoder(config), 3 if architecture == "classification" else 1)
    if architecture == "multiple_choice":
        return multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(config), num_choices=4)
    if architecture == "question_answering":
        return squad_heads.build_squad_model(encoder.AlbertEncoder(config), False)
    raise AssertionError(architecture)


def batch(config, choices=None, seed=0):
    """Padded rows (lengths 12, 7, 3) with two segments; [B, choices, S] for multiple choice."""
    rng = np.random.default_rng(seed)
    rows = 3 * (choices or 1)
    ids = rng.integers(5, config.vocab_size, (rows, 12)).astype(np.int32)
    mask, segments = np.zeros_like(ids), np.zeros_like(ids)
    for row in range(rows):
        length = [12, 7, 3][row % 3]
        mask[row, :length], ids[row, length:] = 1, 0
        segments[row, length // 2:length] = 1
    arrays = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    if choices:
        arrays = {name: value.reshape(3, choices, 12) for name, value in arrays.items()}
    return arrays


def randomise(model, seed):
    rng = np.random.default_rng(seed)
    for name, variable in model.checkpoint_variables().items():
        center = 1.0 if name.endswith("gamma") else 0.0
        variable.assign(center + rng.normal(0, 0.1, variable.shape).astype(np.float32))


def ours_and_theirs(model, hf_model, architecture, inputs):
    """(ours, theirs): the head's outputs of both on `inputs`."""
    hf_model.eval()
    with torch.no_grad():
        result = hf_model(input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
                          attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                          token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long))
    outputs = model(dict(inputs, masked_lm_positions=np.zeros([3, 1], np.int32))
                    if architecture == "pretraining" else inputs, training=False)
    if architecture == "pretraining":
        return ({"sop": outputs["sop_logits"].numpy(), "mlm": outputs["mlm_logits"].numpy()[:, 0]},
                {"sop": result.sop_logits.numpy(), "mlm": result.prediction_logits.numpy()[:, 0]})
    if architecture == "question_answering":
        return ({"start": outputs["start_logits"].numpy(), "end": outputs["end_logits"].numpy()},
                {"start": result.start_logits.numpy(), "end": result.end_logits.numpy()})
    return {"logits": outputs["logits"].numpy()}, {"logits": result.logits.numpy()}


def assert_close(ours, theirs):
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, atol=TOLERANCE, err_msg=name)


@pytest.mark.parametrize("architecture", ["pretraining", "classification", "regression",
                                          "multiple_choice", "question_answering"])
@pytest.mark.parametrize("size", sorted(SIZES))
def test_exported_folder_loads_in_transformers_with_our_outputs(architecture, size, tmp_path):
    config = make_config(size)
    model = our_model(config, architecture)
    inputs = batch(config, 4 if architecture == "multiple_choice" else None)
    model(inputs if architecture != "pretraining" else dict(
        inputs, masked_lm_positions=np.zeros([3, 1], np.int32)))
    randomise(model, seed=1)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "ckpt" / "model.ckpt-5"),
                                          model.checkpoint_variables())
    explicit = architecture if architecture in ("regression", "multiple_choice") else "auto"
    written = hf_format.export_folder(config, prefix, str(tmp_path / "hf"), explicit)
    assert written == architecture
    hf_model = HF_AUTO[architecture].from_pretrained(str(tmp_path / "hf"))
    assert type(hf_model).__name__ == hf_format.HF_CLASS[architecture]
    ours, theirs = ours_and_theirs(model, hf_model, architecture, inputs)
    assert_close(ours, theirs)

    # Back again: the import gives the same variables.
    imported, imported_architecture = hf_import.import_folder(
        str(tmp_path / "hf"), str(tmp_path / "back"), architecture)
    assert imported_architecture == architecture
    reader = tf.train.load_checkpoint(imported)
    for name, variable in model.checkpoint_variables().items():
        np.testing.assert_array_equal(reader.get_tensor(name), variable.numpy(), err_msg=name)
    assert AlbertConfig.from_json_file(str(tmp_path / "back" / "albert_config.json")) == config


@pytest.mark.parametrize("size", sorted(SIZES))
def test_a_folder_transformers_wrote_imports_with_its_outputs(size, tmp_path):
    config = make_config(size)
    hf_config = transformers.AlbertConfig(**{
        key: value for key, value in hf_format.hf_config(config, "classification", 3).items()
        if key not in ("model_type", "architectures")})
    torch.manual_seed(2)
    hf_model = transformers.AlbertForSequenceClassification(hf_config)
    with torch.no_grad():
        for name, parameter in hf_model.named_parameters():
            center = 1.0 if "LayerNorm" in name and name.endswith("weight") else 0.0
            parameter.copy_(center + 0.1 * torch.randn_like(parameter))
        if config.embedding_size == config.hidden_size:  # what the original layout can hold
            mapping = hf_model.albert.encoder.embedding_hidden_mapping_in
            mapping.weight.copy_(torch.eye(config.hidden_size))
            mapping.bias.zero_()
    hf_model.save_pretrained(str(tmp_path / "hf"))
    result = subprocess.run([sys.executable, "import_from_hf.py", f"--hf_model_dir={tmp_path / 'hf'}",
                             f"--output_dir={tmp_path / 'ours'}"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    imported_config = AlbertConfig.from_json_file(str(tmp_path / "ours" / "albert_config.json"))
    assert imported_config == config
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(imported_config), 3)
    report = checkpoints.load_into(model.checkpoint_variables(), str(tmp_path / "ours"))
    assert not report.missing and not report.mismatched and not report.unused
    inputs = batch(config, seed=3)
    model(inputs)
    ours, theirs = ours_and_theirs(model, hf_model, "classification", inputs)
    assert_close(ours, theirs)


def test_export_script_writes_a_tokenizer_transformers_reads(tmp_path, spm_model_file):
    config = brown_config()
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    model({"input_ids": np.zeros([1, 4], np.int32), "input_mask": np.ones([1, 4], np.int32),
           "segment_ids": np.zeros([1, 4], np.int32), "masked_lm_positions": np.zeros([1, 1], np.int32)})
    checkpoints.write_checkpoint(str(tmp_path / "ckpt" / "model.ckpt-1"), model.checkpoint_variables())
    config.to_json_file(str(tmp_path / "albert_config.json"))
    result = subprocess.run(
        [sys.executable, "export_to_hf.py", f"--albert_config_file={tmp_path / 'albert_config.json'}",
         f"--init_checkpoint={tmp_path / 'ckpt'}", f"--spm_model_file={spm_model_file}",
         f"--output_dir={tmp_path / 'hf'}"], cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    with open(tmp_path / "hf" / "config.json") as reader:
        assert json.load(reader)["hidden_act"] == "gelu_new"  # the original's tanh GELU
    assert (tmp_path / "hf" / "tokenizer.json").exists()
    assert re.search(r"Tokenizer: the ids of 0 of \d+ lines of the built-in sample of numbers "
                     r"differ .*, 0 through .*trust_remote_code=True", result.stderr)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    ours = tokenization.FullTokenizer(None, True, spm_model_file)
    texts = ["The Fulton County Grand Jury said Friday an investigation.", "Hello, world!",
             'A well-known (and long-awaited) "re-launch" of the U.S. fleet.']
    for text in texts:
        pieces = ours.tokenize(tokenization.preprocess_text(text, lower=True))
        expected = [2] + ours.convert_tokens_to_ids(pieces) + [3]
        assert hf_tokenizer(text)["input_ids"] == expected
    pair = hf_tokenizer(texts[0], texts[2])  # [CLS] a [SEP] b [SEP], b with segment id 1
    first = len(ours.tokenize(tokenization.preprocess_text(texts[0], lower=True))) + 2
    assert pair["token_type_ids"] == [0] * first + [1] * (len(pair["input_ids"]) - first)
    rerun = subprocess.run(result.args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode != 0 and "already exists" in rerun.stderr  # nothing overwritten
    missing = str(tmp_path / "missing.txt")
    bad_sample = subprocess.run(result.args[:-1] + [f"--output_dir={tmp_path / 'hf2'}",
                                                    f"--tokenizer_sample_file={missing}"],
                                cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert bad_sample.returncode == 2, bad_sample.stderr[-2000:]
    assert f"{missing}: --tokenizer_sample_file not found" in bad_sample.stderr
    assert not (tmp_path / "hf2").exists()  # checked before anything is written


def test_what_the_original_layout_cannot_hold_is_refused(tmp_path):
    config = make_config("e_ne_h")
    v2 = squad_heads.build_squad_model(encoder.AlbertEncoder(config), True)
    v2(dict(batch(config), p_mask=np.zeros([3, 12], np.float32)), training=False)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "v2" / "model.ckpt-1"),
                                          v2.checkpoint_variables())
    with pytest.raises(hf_format.HFFormatError, match="SQuAD v2.0 head"):
        hf_format.export_folder(config, prefix, str(tmp_path / "hf_v2"))
    head = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 1)
    head(batch(config))
    prefix = checkpoints.write_checkpoint(str(tmp_path / "one" / "model.ckpt-1"),
                                          head.checkpoint_variables())
    with pytest.raises(hf_format.HFFormatError, match="--architecture"):
        hf_format.export_folder(config, prefix, str(tmp_path / "hf_one"))

    square = make_config("e_eq_h_groups")
    state = hf_format.to_hf_state({name: np.ones(1) for name, _, _ in hf_format.name_table(
        square, "encoder")}, square, "encoder")
    state["encoder.embedding_hidden_mapping_in.weight"] = np.full([32, 32], 0.5, np.float32)
    with pytest.raises(hf_format.HFFormatError, match="not the identity"):
        hf_format.from_hf_state(state, square, "encoder", "folder")
    fields = hf_format.hf_config(square, "encoder")
    with pytest.raises(hf_format.HFFormatError, match="hidden_act 'gelu'"):
        hf_format.albert_config_from_hf(dict(fields, hidden_act="gelu"), "config.json")


def test_keras_hub_reads_the_exported_folder(tmp_path):
    """keras-hub's own Hugging Face converter (`from_preset` on a local folder) gives our
    encoder's outputs."""
    import keras_hub
    config = make_config("e_ne_h")
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    inputs = batch(config)
    model(dict(inputs, masked_lm_positions=np.zeros([3, 1], np.int32)))
    randomise(model, seed=5)
    checkpoints.write_checkpoint(str(tmp_path / "ckpt" / "model.ckpt-1"), model.checkpoint_variables())
    hf_format.export_folder(config, str(tmp_path / "ckpt"), str(tmp_path / "hf"))
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "hf"))
    theirs = backbone({"token_ids": inputs["input_ids"], "segment_ids": inputs["segment_ids"],
                       "padding_mask": inputs["input_mask"]})
    ours = model(dict(inputs, masked_lm_positions=np.zeros([3, 1], np.int32)), training=False)
    real = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(theirs["sequence_output"])[real],
                               ours["sequence_output"].numpy()[real], atol=TOLERANCE)
