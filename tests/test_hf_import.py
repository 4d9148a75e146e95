"""import_from_hf.py on folders transformers itself writes (`save_pretrained`), one for each of
its ALBERT classes, as model.safetensors and pytorch_model.bin, single and sharded: the import
keeps the encoder and each head under the original's names, and our models built on the
imported checkpoint give transformers' outputs within 1e-5. Runs under transformers 4 (.venv)
and 5 (.venv-hf5, `make test-hf5`)."""

import inspect
import json
import logging
import os
import re
import shutil
import types

import numpy as np
import pytest
import torch
import transformers
from safetensors import torch as safetensors_torch

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.huggingface import hf_format, hf_import, hf_weights
from albert_tf.training import checkpointing
from albert_tf.modeling import (classifier, encoder, multiple_choice, pretraining, squad_heads,
                                token_classifier)
from tests.conftest import run_python
from tests.test_hf_format import batch as hf_format_batch

pytestmark = pytest.mark.slow
TOLERANCE = 1e-5
# E != H: transformers' projection is a real one (E == H needs it to be the identity).
SIZES = dict(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
             hidden_act="gelu_new", layer_norm_eps=1e-12)
CLASSES = {"AlbertModel": "encoder", "AlbertForPreTraining": "pretraining",
           "AlbertForMaskedLM": "masked_lm", "AlbertForSequenceClassification": "classification",
           "AlbertForTokenClassification": "token_classification",
           "AlbertForQuestionAnswering": "question_answering",
           "AlbertForMultipleChoice": "multiple_choice"}
SAVES_BIN = "safe_serialization" in inspect.signature(transformers.PreTrainedModel.save_pretrained).parameters


def hf_model(class_name, seed=0, **fields):
    """A transformers ALBERT of `class_name` with every parameter random (biases and LayerNorm
    included), so that a misplaced tensor shows."""
    config = transformers.AlbertConfig(**dict(SIZES, **fields))
    config._attn_implementation = "eager"  # masks padded rows as the original does
    torch.manual_seed(seed)
    model = getattr(transformers, class_name)(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            center = 1.0 if "LayerNorm" in name and name.endswith("weight") else 0.0
            parameter.copy_(center + 0.1 * torch.randn_like(parameter))
    return model.eval()


def save(model, folder, form):
    """`form`: safetensors or bin, single or sharded (max_shard_size). transformers 5 writes
    safetensors only: there the pytorch_model.bin folder is written as transformers 4 writes it
    (`torch.save` of the state dict without the tied decoder, an index for shards)."""
    sharded = form.startswith("sharded_")
    if form.endswith("safetensors") or SAVES_BIN:
        options = dict(max_shard_size="100KB") if sharded else {}
        if SAVES_BIN:
            options["safe_serialization"] = form.endswith("safetensors")
        model.save_pretrained(folder, **options)
        return
    model.config.save_pretrained(folder)
    state = {name: tensor for name, tensor in model.state_dict().items()
             if not name.startswith("predictions.decoder.")}
    if not sharded:
        torch.save(state, os.path.join(folder, "pytorch_model.bin"))
        return
    names = sorted(state)
    weight_map = {}
    for index, chunk in enumerate((names[::2], names[1::2])):
        shard = f"pytorch_model-0000{index + 1}-of-00002.bin"
        torch.save({name: state[name] for name in chunk}, os.path.join(folder, shard))
        weight_map.update({name: shard for name in chunk})
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as writer:
        json.dump({"metadata": {}, "weight_map": weight_map}, writer)


def inputs(choices=None, seed=0):
    """test_hf_format's padded rows (lengths 12, 7, 3; [3, choices, 12] for multiple choice)."""
    return hf_format_batch(types.SimpleNamespace(vocab_size=SIZES["vocab_size"]), choices, seed)


def run_hf(model, batch):
    with torch.no_grad():
        return model(input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                     token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long))


def our_model(config, architecture, num_labels):
    albert = encoder.AlbertEncoder(config)
    if architecture in ("pretraining", "masked_lm"):
        return pretraining.AlbertPretrainingModel(albert)
    if architecture == "classification":
        return classifier.AlbertClassifier(albert, num_labels)
    if architecture == "token_classification":
        return token_classifier.AlbertTokenClassifier(albert, num_labels)
    if architecture == "multiple_choice":
        return multiple_choice.AlbertMultipleChoice(albert, num_choices=4)
    if architecture == "question_answering":
        return squad_heads.build_squad_model(albert, False)
    return albert


def head_outputs(architecture, ours, theirs, positions):
    """{name: (ours, transformers')} of the head."""
    if architecture in ("pretraining", "masked_lm"):
        logits = theirs.prediction_logits if architecture == "pretraining" else theirs.logits
        pairs = {"mlm": (ours["mlm_logits"], np.take_along_axis(
            logits.numpy(), positions[:, :, None].astype(np.int64), axis=1))}
        if architecture == "pretraining":
            pairs["sop"] = (ours["sop_logits"], theirs.sop_logits.numpy())
        return pairs
    if architecture == "question_answering":
        return {"start": (ours["start_logits"], theirs.start_logits.numpy()),
                "end": (ours["end_logits"], theirs.end_logits.numpy())}
    if architecture == "encoder":
        return {"pooled": (ours["pooled_output"], theirs.pooler_output.numpy())}
    return {"logits": (ours["logits"], theirs.logits.numpy())}


POOLER = ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
SOP = ["cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"]
NOT_IN_FOLDER = {"masked_lm": POOLER + SOP, "token_classification": POOLER,
                 "question_answering": POOLER}


def assert_imported_outputs_equal(model, architecture, output_dir, num_labels=3, missing=None):
    """Our model of `architecture` on the imported checkpoint: every variable the folder had
    is loaded (`missing`, the variables it lacks, are new heads), and the encoder's and head's
    outputs are transformers' within TOLERANCE."""
    config = AlbertConfig.from_json_file(os.path.join(output_dir, "albert_config.json"))
    ours = our_model(config, architecture, num_labels)
    batch = inputs(4 if architecture == "multiple_choice" else None, seed=3)
    positions = np.array([[1, 5, 11], [0, 2, 6], [1, 2, 1]], np.int32)
    feed = dict(batch, masked_lm_positions=positions) if architecture in (
        "pretraining", "masked_lm") else batch
    ours(feed)
    report = checkpoints.load_into(ours.checkpoint_variables(), output_dir)
    assert not report.mismatched and not report.unused, str(report)
    expected = NOT_IN_FOLDER.get(architecture, []) if missing is None else missing
    assert sorted(report.missing) == sorted(expected)
    outputs = {name: value.numpy() for name, value in ours(feed, training=False).items()
               if hasattr(value, "numpy")}
    theirs = run_hf(model, batch)
    if architecture != "multiple_choice":  # its encoder sees [3·4, 12] rows
        sequence = run_hf(model.base_model, batch).last_hidden_state.numpy()
        albert_outputs = encoder.AlbertEncoder(config)
        albert_outputs(batch)
        checkpoints.load_into(albert_outputs.checkpoint_variables(), output_dir)
        np.testing.assert_allclose(albert_outputs(batch)["sequence_output"].numpy(), sequence,
                                   atol=TOLERANCE, err_msg="sequence_output")
    for name, (mine, reference) in head_outputs(architecture, outputs, theirs, positions).items():
        np.testing.assert_allclose(mine, reference, atol=TOLERANCE, err_msg=name)


@pytest.mark.parametrize("class_name", sorted(CLASSES))
def test_every_transformers_class_imports_with_its_outputs(class_name, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="absl")
    fields = dict(num_labels=3) if "Classification" in class_name else {}
    model = hf_model(class_name, seed=1, **fields)
    save(model, str(tmp_path / "hf"), "safetensors")
    prefix, architecture = hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert "belong to no ALBERT part" not in caplog.text  # every tensor of the class is known
    assert architecture == CLASSES[class_name]
    assert prefix == str(tmp_path / "ours" / "model.ckpt-0")
    assert_imported_outputs_equal(model, architecture, str(tmp_path / "ours"))
    if "Classification" in class_name:  # config.json's id2label, in id order
        assert (tmp_path / "ours" / "labels.txt").read_text().split() == [
            "LABEL_0", "LABEL_1", "LABEL_2"]
    # run_classifier.py's --init_checkpoint path on the folder: the whole encoder loads, and
    # only the new head (with the pooler, for a class without one) is left initialised.
    config = AlbertConfig.from_json_file(str(tmp_path / "ours" / "albert_config.json"))
    # A folder with a classification head (multiple choice: one output per choice) keeps it.
    own_head = {"AlbertForSequenceClassification": 3, "AlbertForMultipleChoice": 1,
                "AlbertForTokenClassification": 3}  # the original names every such head alike
    fine_tuned = classifier.AlbertClassifier(encoder.AlbertEncoder(config),
                                             own_head.get(class_name, 2))
    fine_tuned(inputs())
    report = checkpointing.warm_start(fine_tuned.checkpoint_variables(), str(tmp_path / "ours"))
    new_head = set() if class_name in own_head else {"output_weights", "output_bias"}
    if class_name in ("AlbertForMaskedLM", "AlbertForTokenClassification",
                      "AlbertForQuestionAnswering"):
        new_head |= {"bert/pooler/dense/kernel", "bert/pooler/dense/bias"}
    assert set(report.missing) == new_head and not report.mismatched, str(report)


@pytest.mark.parametrize("form", ["bin", "sharded_safetensors", "sharded_bin"])
def test_pytorch_model_bin_and_shards_import_as_safetensors_do(form, tmp_path):
    model = hf_model("AlbertForMaskedLM", seed=2)
    save(model, str(tmp_path / "hf"), form)
    source = hf_weights.weights_source(str(tmp_path / "hf"))
    assert os.path.basename(source) == {"bin": "pytorch_model.bin",
                                        "sharded_safetensors": "model.safetensors.index.json",
                                        "sharded_bin": "pytorch_model.bin.index.json"}[form]
    if form.startswith("sharded"):
        assert len([name for name in os.listdir(tmp_path / "hf") if "-of-" in name]) > 1
    hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert_imported_outputs_equal(model, "masked_lm", str(tmp_path / "ours"))


def test_regression_and_named_labels(tmp_path):
    regression = hf_model("AlbertForSequenceClassification", seed=4, num_labels=1,
                          problem_type="regression")
    save(regression, str(tmp_path / "sts"), "safetensors")
    _, architecture = hf_import.import_folder(str(tmp_path / "sts"), str(tmp_path / "sts_ours"))
    assert architecture == "regression"
    assert_imported_outputs_equal(regression, "classification", str(tmp_path / "sts_ours"), 1)
    named = hf_model("AlbertForSequenceClassification", seed=5,
                     id2label={0: "negative", 1: "neutral", 2: "positive"},
                     label2id={"negative": 0, "neutral": 1, "positive": 2})
    save(named, str(tmp_path / "named"), "safetensors")
    hf_import.import_folder(str(tmp_path / "named"), str(tmp_path / "named_ours"))
    assert (tmp_path / "named_ours" / "labels.txt").read_text() == "negative\nneutral\npositive\n"


def test_architecture_is_an_override(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="absl")
    model = hf_model("AlbertForPreTraining", seed=6)
    save(model, str(tmp_path / "hf"), "safetensors")
    hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "encoder"), "encoder")
    names = checkpoints.list_variables(str(tmp_path / "encoder"))
    assert "bert/pooler/dense/kernel" in names
    assert not [name for name in names if name.startswith("cls/")]
    assert "masked-LM head (cls/predictions) not taken" in caplog.text
    masked_lm = hf_model("AlbertForMaskedLM", seed=7)
    save(masked_lm, str(tmp_path / "mlm"), "safetensors")
    with pytest.raises(hf_format.HFFormatError,
                       match=r"model.safetensors: --architecture=pretraining needs the "
                             r"sentence-order head \(cls/seq_relationship\)"):
        hf_import.import_folder(str(tmp_path / "mlm"), str(tmp_path / "refused"), "pretraining")
    assert not (tmp_path / "refused").exists()
    caplog.clear()
    hf_import.import_folder(str(tmp_path / "mlm"), str(tmp_path / "mlm_ours"))
    assert re.search(r"mlm/model.safetensors has no pooler \(bert/pooler/dense\): the "
                     r"fine-tuning scripts that read it .* initialise it as a new head",
                     caplog.text)


def test_tensors_of_no_albert_part_are_named(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="absl")
    save(hf_model("AlbertModel", seed=18), str(tmp_path / "hf"), "safetensors")
    state, path = hf_weights.read_state(str(tmp_path / "hf"))
    state["adapter.weight"] = np.zeros([2, 2], np.float32)
    from safetensors import numpy as safetensors_numpy
    safetensors_numpy.save_file(state, path, metadata={"format": "pt"})
    hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert "hf/model.safetensors: 1 tensors belong to no ALBERT part and were not imported: " \
           "adapter.weight" in caplog.text


def test_folders_that_are_not_albert_are_refused_naming_the_file(tmp_path):
    def refused(folder, pattern):
        output = tmp_path / f"out_{os.path.basename(folder)}"
        with pytest.raises(hf_format.HFFormatError, match=pattern):
            hf_import.import_folder(str(folder), str(output))
        assert not output.exists()

    bert = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=20))
    bert.save_pretrained(str(tmp_path / "bert"))
    refused(tmp_path / "bert", r"bert/config.json: model_type 'bert': expected 'albert'")
    script = run_python(["import_from_hf.py", f"--hf_model_dir={tmp_path / 'bert'}",
                         f"--output_dir={tmp_path / 'script_out'}"], check=False)
    assert script.returncode == 2 and "Traceback" not in script.stderr
    assert "bert/config.json: model_type 'bert': expected 'albert'" in script.stderr.splitlines()[-1]
    assert not (tmp_path / "script_out").exists()
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty", r"empty: no config.json: expected a Hugging Face model folder")
    model = hf_model("AlbertForMaskedLM")
    model.config.save_pretrained(str(tmp_path / "config_only"))
    refused(tmp_path / "config_only", r"config_only: no weights: expected model.safetensors or "
                                      r"pytorch_model.bin")
    save(model, str(tmp_path / "wider"), "safetensors")
    with open(tmp_path / "wider" / "config.json") as reader:
        fields = json.load(reader)
    with open(tmp_path / "wider" / "config.json", "w") as writer:
        json.dump(dict(fields, intermediate_size=64), writer)
    refused(tmp_path / "wider", r"wider/model.safetensors: tensor albert.encoder.albert_layer_"
                                r"groups.0.albert_layers.0.ffn.weight has shape \[37, 32\]; the "
                                r"config .* expects \[64, 32\]")


def test_the_script_imports_a_hub_layout_masked_lm_that_run_classifier_fine_tunes(
        tmp_path, spm_model_file):
    """The Hub's albert-base-v2 layout: AlbertForMaskedLM in config.json, weights with the
    pooler (saved from pretraining) and the masked-LM head, no sentence-order head, and
    spiece.model. Then a folder as transformers saves AlbertForMaskedLM (no pooler). Both
    fine-tune with run_classifier.py, the second with its pooler a new head."""
    pretrained = hf_model("AlbertForPreTraining", seed=8)
    state = {name: value.contiguous() for name, value in pretrained.state_dict().items()
             if not name.startswith(("sop_classifier.", "predictions.decoder."))}
    hub = tmp_path / "hub"
    hub.mkdir()
    safetensors_torch.save_file(state, str(hub / "model.safetensors"), metadata={"format": "pt"})
    pretrained.config.architectures = ["AlbertForMaskedLM"]
    pretrained.config.save_pretrained(str(hub))
    shutil.copyfile(spm_model_file, hub / "spiece.model")
    result = run_python(["import_from_hf.py", f"--hf_model_dir={hub}",
                         f"--output_dir={tmp_path / 'base'}"])
    assert re.search(r"Imported .*hub/model.safetensors \(AlbertForMaskedLM\) into .*base: the "
                     r"encoder, pooler \(bert/pooler/dense\), masked-LM head", result.stderr)
    assert (tmp_path / "base" / "spiece.model").exists()
    hub_model = hf_model("AlbertForMaskedLM", seed=11)
    hub_model.load_state_dict(state, strict=False)  # the pooler is not AlbertForMaskedLM's
    assert_imported_outputs_equal(hub_model, "masked_lm", str(tmp_path / "base"), missing=SOP)

    save(hf_model("AlbertForMaskedLM", seed=10), str(tmp_path / "plain"), "safetensors")
    run_python(["import_from_hf.py", f"--hf_model_dir={tmp_path / 'plain'}",
                f"--output_dir={tmp_path / 'plain_ours'}"])
    data = tmp_path / "glue" / "SST-2"
    data.mkdir(parents=True)
    rows = "".join(f"{'a fine film' if i % 2 else 'a dull film'} {i}\t{i % 2}\n" for i in range(8))
    (data / "train.tsv").write_text("sentence\tlabel\n" + rows)
    (data / "dev.tsv").write_text("sentence\tlabel\n" + rows)
    for imported in ("base", "plain_ours"):
        result = run_python([
            "run_classifier.py", "--task_name=sst-2", f"--data_dir={tmp_path / 'glue'}",
            f"--albert_config_file={tmp_path / imported / 'albert_config.json'}",
            f"--spm_model_file={spm_model_file}", f"--init_checkpoint={tmp_path / imported}",
            f"--output_dir={tmp_path / ('run_' + imported)}", "--do_train", "--do_eval",
            "--max_seq_length=16", "--train_step=2", "--warmup_step=0", "--train_batch_size=4",
            "--eval_batch_size=4"])
        assert "eval_accuracy" in result.stderr
        pooler_new = re.search(r"has no bert/pooler/dense/kernel, bert/pooler/dense/bias, "
                               r"output_weights, output_bias: new head", result.stderr)
        assert bool(pooler_new) == (imported == "plain_ours"), result.stderr[-3000:]


@pytest.mark.parametrize("class_name", ["AlbertForMaskedLM", "AlbertForTokenClassification"])
def test_round_trip_hf_to_ours_to_hf_keeps_the_class_and_its_outputs(class_name, tmp_path):
    """HF → import → export → HF: the same class, every tensor, logits within 1e-5 (the
    masked-LM logits over the whole vocabulary at every position)."""
    fields = dict(id2label={0: "O", 1: "B-PER", 2: "I-PER"},
                  label2id={"O": 0, "B-PER": 1, "I-PER": 2}) if "Token" in class_name else {}
    model = hf_model(class_name, seed=12, **fields)
    save(model, str(tmp_path / "hf"), "safetensors")
    _, architecture = hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "ours"))
    labels = (tmp_path / "ours" / "labels.txt").read_text().split() if "Token" in class_name else None
    config = AlbertConfig.from_json_file(str(tmp_path / "ours" / "albert_config.json"))
    written = hf_format.export_folder(config, str(tmp_path / "ours"), str(tmp_path / "back"),
                                      architecture, label_names=labels)
    assert written == architecture == CLASSES[class_name]
    back = getattr(transformers, class_name).from_pretrained(str(tmp_path / "back"),
                                                            attn_implementation="eager").eval()
    assert type(back).__name__ == class_name
    if labels:
        assert back.config.id2label == {0: "O", 1: "B-PER", 2: "I-PER"}
    original_state, returned_state = model.state_dict(), back.state_dict()
    assert sorted(original_state) == sorted(returned_state)
    for name, tensor in original_state.items():
        np.testing.assert_array_equal(returned_state[name].numpy(), tensor.numpy(), err_msg=name)
    batch = inputs(seed=13)
    np.testing.assert_allclose(run_hf(back, batch).logits.numpy(), run_hf(model, batch).logits.numpy(),
                               atol=TOLERANCE)


def test_export_detects_a_masked_lm_checkpoint_and_keeps_its_pooler(tmp_path):
    """A checkpoint with cls/predictions and no sentence-order head is an AlbertForMaskedLM;
    its pooler, when it has one, is written too (keras-hub's converter reads it)."""
    pretrained = hf_model("AlbertForPreTraining", seed=14)
    save(pretrained, str(tmp_path / "hf"), "safetensors")
    hf_import.import_folder(str(tmp_path / "hf"), str(tmp_path / "ours"), "masked_lm")
    assert not [name for name in checkpoints.list_variables(str(tmp_path / "ours"))
                if name.startswith("cls/seq_relationship")]
    config = AlbertConfig.from_json_file(str(tmp_path / "ours" / "albert_config.json"))
    assert hf_format.export_folder(config, str(tmp_path / "ours"), str(tmp_path / "back")) == "masked_lm"
    state, _ = hf_weights.read_state(str(tmp_path / "back"))
    np.testing.assert_array_equal(state["albert.pooler.weight"],
                                  pretrained.state_dict()["albert.pooler.weight"].numpy())
    back = transformers.AutoModelForMaskedLM.from_pretrained(
        str(tmp_path / "back"), attn_implementation="eager").eval()
    batch = inputs(seed=15)
    np.testing.assert_allclose(run_hf(back, batch).logits.numpy(),
                               run_hf(pretrained, batch).prediction_logits.numpy(), atol=TOLERANCE)


@pytest.fixture(scope="module")
def tokenizer_json_folder(real_data, tmp_path_factory):
    """A folder with only tokenizer.json, as transformers writes it for an ALBERT
    SentencePiece model (a 2,000-piece Brown model without user-defined pieces)."""
    from albert_tf.text import vocab
    directory = tmp_path_factory.mktemp("tokenizer_json")
    spm = vocab.train_albert_spm(real_data["brown"][:1], str(directory / "b2k"), vocab_size=2000,
                                 user_defined_symbols=[])
    (directory / "source").mkdir()
    shutil.copyfile(spm, directory / "source" / "spiece.model")
    tokenizer_class = getattr(transformers, "AlbertTokenizerFast", transformers.AlbertTokenizer)
    tokenizer_class.from_pretrained(str(directory / "source")).save_pretrained(str(directory / "hf"))
    if (directory / "hf" / "spiece.model").exists():  # transformers 4 writes it too
        os.remove(directory / "hf" / "spiece.model")
    return directory / "hf"


def test_a_tokenizer_json_only_folder_gets_a_sentencepiece_model_with_autotokenizers_ids(
        tokenizer_json_folder, real_data, tmp_path, caplog):
    """The ids of the rebuilt spiece.model through the scripts' tokenization
    (preprocess_text, encode_pieces) equal AutoTokenizer's on every line of a held-out text
    (Botchan: not the Brown text the vocabulary was trained on)."""
    from albert_tf.text import tokenization
    caplog.set_level(logging.INFO, logger="absl")
    folder = tmp_path / "hf"
    shutil.copytree(tokenizer_json_folder, folder)
    hf_model("AlbertModel", vocab_size=2000).save_pretrained(str(folder))
    hf_import.import_folder(str(folder), str(tmp_path / "ours"))
    assert "wrote" in caplog.text and "spiece.model rebuilt from tokenizer.json" in caplog.text
    full = tokenization.FullTokenizer(None, True, str(tmp_path / "ours" / "spiece.model"))
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    with open(real_data["botchan"], encoding="utf-8") as reader:
        lines = [line for line in reader.read().splitlines() if line.strip()]
    assert len(lines) > 4000
    differing = [line for line in lines if auto(line)["input_ids"] != [2] + full.convert_tokens_to_ids(
        full.tokenize(tokenization.preprocess_text(line, lower=True))) + [3]]
    assert differing == [], (len(differing), differing[:3])


def test_a_tokenizer_json_that_cannot_be_expressed_is_refused_with_its_reason(
        tokenizer_json_folder, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="absl")
    with open(tokenizer_json_folder / "tokenizer.json", encoding="utf-8") as reader:
        data = json.load(reader)
    cases = {"bpe": dict(data, model=dict(data["model"], type="BPE")),
             "accents": dict(data, normalizer={"type": "Lowercase"}),
             "added": dict(data, added_tokens=data["added_tokens"] + [
                 {"id": 100, "content": "-", "special": False}])}
    reasons = {"bpe": "a BPE model: only a Unigram vocabulary",
               "accents": "the normalizer keeps accents",
               "added": "prefixes ▁ to the text after each"}
    for name, content in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "tokenizer.json").write_text(json.dumps(content), encoding="utf-8")
        hf_model("AlbertModel", vocab_size=2000).save_pretrained(str(folder))
        caplog.clear()
        hf_import.import_folder(str(folder), str(tmp_path / f"ours_{name}"))
        assert reasons[name] in caplog.text
        assert not (tmp_path / f"ours_{name}" / "spiece.model").exists()


def keras_hub_task(task_class, seed, vocabulary_size=97, spm_model_file=None):
    """A tiny keras-hub ALBERT task (or backbone) with every variable random."""
    import keras_hub
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=vocabulary_size, num_layers=2, num_heads=4, num_groups=1,
        num_inner_repetitions=1, embedding_dim=16, hidden_dim=32, intermediate_dim=37,
        max_sequence_length=64)
    preprocessor = None
    if spm_model_file:
        tokenizer = keras_hub.models.AlbertTokenizer(proto=spm_model_file)
        preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer)
    model = {"AlbertBackbone": lambda: backbone,
             "AlbertMaskedLM": lambda: keras_hub.models.AlbertMaskedLM(backbone, preprocessor=None),
             "AlbertTextClassifier": lambda: keras_hub.models.AlbertTextClassifier(
                 backbone, num_classes=3, preprocessor=preprocessor)}[task_class]()
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        center = 1.0 if variable.path.endswith("gamma") else 0.0
        variable.assign(center + rng.normal(0, 0.1, variable.shape).astype(np.float32))
    return backbone, model


@pytest.mark.parametrize("task_class", ["AlbertBackbone", "AlbertMaskedLM", "AlbertTextClassifier"])
def test_a_keras_hub_preset_imports_with_its_outputs(task_class, tmp_path, spm_model_file):
    vocabulary = 4000 if task_class == "AlbertTextClassifier" else 97
    backbone, model = keras_hub_task(task_class, 16, vocabulary, spm_model_file
                                     if task_class == "AlbertTextClassifier" else None)
    model.save_to_preset(str(tmp_path / "preset"))
    _, architecture = hf_import.import_folder(str(tmp_path / "preset"), str(tmp_path / "ours"))
    assert architecture == {"AlbertBackbone": "encoder", "AlbertMaskedLM": "masked_lm",
                            "AlbertTextClassifier": "classification"}[task_class]
    config = AlbertConfig.from_json_file(str(tmp_path / "ours" / "albert_config.json"))
    assert (config.vocab_size, config.embedding_size, config.hidden_size) == (vocabulary, 16, 32)
    batch = inputs(seed=17)
    batch["input_ids"] = batch["input_ids"] % vocabulary
    feed = {"token_ids": batch["input_ids"], "segment_ids": batch["segment_ids"],
            "padding_mask": batch["input_mask"]}
    positions = np.array([[1, 5, 11], [0, 2, 6], [1, 2, 1]], np.int32)
    ours = {"AlbertBackbone": lambda: encoder.AlbertEncoder(config),
            "AlbertMaskedLM": lambda: pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config)),
            "AlbertTextClassifier": lambda: classifier.AlbertClassifier(
                encoder.AlbertEncoder(config), 3)}[task_class]()
    ours_feed = dict(batch, masked_lm_positions=positions) if task_class == "AlbertMaskedLM" else batch
    ours(ours_feed)
    report = checkpoints.load_into(ours.checkpoint_variables(), str(tmp_path / "ours"))
    assert not report.unused and not report.mismatched
    assert report.missing == (SOP if task_class == "AlbertMaskedLM" else [])
    mine = ours(ours_feed, training=False)
    theirs = backbone(feed)
    sequence = mine["sequence_output"] if "sequence_output" in mine else None
    if sequence is not None:
        np.testing.assert_allclose(sequence.numpy(), np.asarray(theirs["sequence_output"]),
                                   atol=TOLERANCE)
        np.testing.assert_allclose(mine["pooled_output"].numpy(),
                                   np.asarray(theirs["pooled_output"]), atol=TOLERANCE)
    if task_class == "AlbertMaskedLM":
        # keras-hub's masked-LM head normalises with LayerNorm epsilon 1e-5, the original's (and
        # transformers') with 1e-12: the same weights, compared at the original's epsilon.
        head_norm = model.masked_lm_head._intermediate_layer_norm
        assert head_norm.epsilon == 1e-5
        head_norm.epsilon = 1e-12
        logits = model(dict(feed, mask_positions=positions))
        np.testing.assert_allclose(mine["mlm_logits"].numpy(), np.asarray(logits), atol=TOLERANCE)
    if task_class == "AlbertTextClassifier":
        np.testing.assert_allclose(mine["logits"].numpy(), np.asarray(model(feed)), atol=TOLERANCE)
        assert (tmp_path / "ours" / "spiece.model").read_bytes() == open(spm_model_file, "rb").read()


def test_a_keras_hub_preset_of_another_model_is_refused(tmp_path):
    import keras_hub
    bert = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2,
                                         hidden_dim=16, intermediate_dim=20,
                                         max_sequence_length=20)
    bert.save_to_preset(str(tmp_path / "bert"))
    with pytest.raises(hf_format.HFFormatError, match=r"bert/config.json: a keras-hub "
                                                      r"BertBackbone, expected AlbertBackbone"):
        hf_import.import_folder(str(tmp_path / "bert"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
