"""run_classifier.py end to end on real labelled data (the movie-review sentences).

A tiny ALBERT is fine-tuned as SST-2 (binary) through the script and as STS-B (regression)
through the library, from a RANDOM initialisation (--allow_random_init): a checkpoint of a
few hundred run_pretraining.py steps on the Brown Corpus only learns unigram statistics (its
[CLS] output hardly depends on the input; sentence-order accuracy stays at the majority rate),
and fine-tuning from it left SST-2 at the majority class in 2 of 3 trial runs, against 3 of 3
from a random start. Warm-starting from a run_pretraining.py checkpoint is checked exactly
instead (test_warm_start_from_a_run_pretraining_checkpoint). Evaluation, model.ckpt-best,
the prediction files and the exported SavedModel (loaded in a fresh process) are checked.

The learning rate is 3e-4: the original AdamW has no bias correction, which makes its early
steps ~2-3x larger than torch's AdamW at the same rate; at 1e-3 this tiny model often stalls.
"""

import collections
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints, errors
from albert_tf.config import AlbertConfig
from albert_tf.export import classifier as classifier_export
from albert_tf.glue import features, movie_reviews, processors
from albert_tf.glue import run as glue_run
from albert_tf.demo.curves import read_scalars
from albert_tf.training import evaluation, fine_tuning, loop
from tests.conftest import run_python

SEQ = 64
MODEL = {"embedding_size": 64, "hidden_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 256, "max_position_embeddings": SEQ,
         "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


@pytest.fixture(scope="module")
def albert_config_file(spm_model_file, tmp_path_factory):
    vocab_size = sum(1 for _ in open(spm_model_file[:-len(".model")] + ".vocab", encoding="utf-8"))
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    AlbertConfig.from_dict(dict(MODEL, vocab_size=vocab_size)).to_json_file(path)
    return path


@pytest.fixture(scope="module")
def pretrained_dir(real_data, spm_model_file, albert_config_file, tmp_path_factory):
    """A checkpoint written by run_pretraining.py (MLM + SOP) on a Brown Corpus shard."""
    work = tmp_path_factory.mktemp("pretraining")
    records = str(work / "brown.tfrecord")
    run_python(["create_pretraining_data.py", f"--input_file={real_data['brown'][0]}",
               f"--output_file={records}", f"--spm_model_file={spm_model_file}",
               f"--max_seq_length={SEQ}", "--max_predictions_per_seq=10", "--dupe_factor=1",
               "--num_workers=1"])
    output_dir = str(work / "model")
    run_python(["run_pretraining.py", f"--albert_config_file={albert_config_file}",
               f"--input_file={records}", f"--output_dir={output_dir}", "--do_train",
               f"--max_seq_length={SEQ}", "--max_predictions_per_seq=10", "--train_batch_size=16",
               "--num_train_steps=10", "--num_warmup_steps=2", "--learning_rate=0.002",
               "--save_checkpoints_steps=10", "--iterations_per_loop=10"])
    return output_dir


@pytest.fixture(scope="module")
def sst2_run(real_data, spm_model_file, albert_config_file, tmp_path_factory):
    """run_classifier.py --do_train --do_eval --do_predict --export_dir on the SST-2 layout."""
    work = tmp_path_factory.mktemp("sst2")
    glue_dir = str(work / "glue")
    movie_reviews.write_sst2_task(real_data["movie_reviews"], os.path.join(glue_dir, "SST-2"))
    output_dir, export_dir = str(work / "out"), str(work / "export")
    result = run_python(["run_classifier.py", "--task_name=SST-2", f"--data_dir={glue_dir}",
               f"--output_dir={output_dir}", f"--albert_config_file={albert_config_file}",
               f"--spm_model_file={spm_model_file}", "--allow_random_init",
               "--do_train", "--do_eval", "--do_predict", f"--export_dir={export_dir}",
               "--threshold_to_export=0.75", f"--max_seq_length={SEQ}", "--train_batch_size=32",
               "--train_step=400", "--warmup_step=40", "--learning_rate=3e-4",
               "--save_checkpoints_steps=100", "--iterations_per_loop=50", "--eval_batch_size=64",
               "--predict_batch_size=64", "--seed=1"])
    return {"glue_dir": glue_dir, "output_dir": output_dir, "export_dir": export_dir,
            "config": albert_config_file, "spm": spm_model_file, "stderr": result.stderr}


def _eval_blocks(path):
    blocks, current = [], {}
    with open(path) as reader:
        for line in reader:
            key, value = line.strip().split(" = ")
            current[key] = float(value)
            if key == "best_global_step":
                blocks.append(current)
                current = {}
    return blocks


def _sst2_examples(glue_dir, split):
    processor = processors.get_processor("sst-2", use_spm=False)
    return getattr(processor, f"get_{split}_examples")(glue_dir)


@pytest.mark.slow
def test_sst2_fine_tuning_beats_majority_and_evaluates_every_checkpoint(sst2_run):
    output_dir = sst2_run["output_dir"]
    blocks = _eval_blocks(os.path.join(output_dir, "eval_results.txt"))
    assert [b["global_step"] for b in blocks] == [100, 200, 300, 400]
    for block in blocks:
        assert {"eval_accuracy", "eval_loss", "global_step"} <= set(block)
    best = max(blocks, key=lambda b: b["eval_accuracy"])
    dev_labels = collections.Counter(e.label for e in _sst2_examples(sst2_run["glue_dir"], "dev"))
    majority = max(dev_labels.values()) / sum(dev_labels.values())
    assert best["eval_accuracy"] > majority + 0.08, (best, majority)

    with open(os.path.join(output_dir, "best_trial.txt")) as reader:
        last, best_step, best_value = reader.read().strip().split(":")
    assert int(last) == 400 and int(best_step) == best["global_step"]
    assert float(best_value) == pytest.approx(best["eval_accuracy"])
    best_tensors = checkpoints.read_tensors(os.path.join(output_dir, "model.ckpt-best"))
    step_tensors = checkpoints.read_tensors(os.path.join(output_dir, f"model.ckpt-{int(best_step)}"))
    assert best_tensors.keys() == step_tensors.keys()
    for name in ("output_weights", "bert/embeddings/word_embeddings"):
        np.testing.assert_array_equal(best_tensors[name], step_tensors[name])


@pytest.mark.slow
def test_default_log_has_no_tensorflow_routine_lines(sst2_run):
    """Four checkpoints and an export at the default verbosity: none of TensorFlow's routine
    INFO lines (albert_tf.native_log demotes them to DEBUG; tests/test_log_noise.py shows
    TensorFlow printing them otherwise)."""
    stderr = sst2_run["stderr"]
    assert "model.ckpt-400" in stderr and sst2_run["export_dir"] in stderr  # it did both
    for line in ("with unsupported characters which will be renamed",
                 "Sharding callback duration", "Assets written to"):
        assert line not in stderr, line


@pytest.mark.slow
def test_tensorboard_overlays_training_and_evaluation(sst2_run):
    """TensorBoard's reader finds the scalars; evaluation tags drop `eval_` so `loss` and
    `accuracy` of the two runs overlay."""
    train = read_scalars(sst2_run["output_dir"])
    evaluation = read_scalars(os.path.join(sst2_run["output_dir"], "eval"))
    assert {"loss", "accuracy", "learning_rate"} <= set(train)
    assert {"loss", "accuracy"} <= set(evaluation) and not any(
        tag.startswith("eval_") for tag in evaluation)
    steps, values = evaluation["accuracy"]
    assert steps == [100, 200, 300, 400]
    blocks = _eval_blocks(os.path.join(sst2_run["output_dir"], "eval_results.txt"))
    np.testing.assert_allclose(values, [b["eval_accuracy"] for b in blocks], rtol=1e-6)


@pytest.mark.slow
def test_sst2_prediction_files(sst2_run, real_data):
    output_dir = sst2_run["output_dir"]
    test_examples = _sst2_examples(sst2_run["glue_dir"], "test")
    probabilities = np.loadtxt(os.path.join(output_dir, "test_results.tsv"), delimiter="\t")
    assert probabilities.shape == (len(test_examples), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    with open(os.path.join(output_dir, "submit_results.tsv")) as reader:
        rows = [line.rstrip("\n").split("\t") for line in reader]
    assert rows[0] == ["index", "prediction"]
    assert [r[0] for r in rows[1:]] == [e.guid for e in test_examples]
    assert [r[1] for r in rows[1:]] == [str(i) for i in probabilities.argmax(axis=1)]
    truth = {r.id: movie_reviews.sst2_label(r.score)
             for r in movie_reviews.read_reviews(real_data["movie_reviews"])}
    gold = [truth[e.guid] for e in test_examples]
    accuracy = np.mean([g == p[1] for g, p in zip(gold, rows[1:])])
    majority = max(collections.Counter(gold).values()) / len(gold)
    assert accuracy > majority + 0.08, (accuracy, majority)


_FRESH_PROCESS = r"""
import json, os, sys
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece op
request = json.load(open(sys.argv[2]))
version = max(int(name) for name in os.listdir(sys.argv[1]) if name.isdigit())
model = tf.saved_model.load(os.path.join(sys.argv[1], str(version)))
out = {"signatures": sorted(model.signatures)}
examples = model.signatures["serving_default"](
    serialized_example=tf.constant([bytes.fromhex(h) for h in request["serialized"]]))
ids = model.signatures["ids"](**{k: tf.constant(v, tf.int32) for k, v in request["ids"].items()})
text = model.signatures["text"](text_a=tf.constant(request["text_a"]), text_b=tf.constant(request["text_b"]))
for name, result in (("serving_default", examples), ("ids", ids), ("text", text)):
    out[name] = {k: v.numpy().tolist() if v.dtype != tf.string else [s.decode() for s in v.numpy()]
                 for k, v in result.items()}
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_exported_saved_model_in_a_fresh_process(sst2_run, tmp_path):
    export_dir, output_dir = sst2_run["export_dir"], sst2_run["output_dir"]
    versions = [name for name in os.listdir(export_dir) if not name.startswith(".")]
    assert len(versions) == 1 and versions[0].isdigit()

    job = glue_run.ClassifierJob("sst-2", sst2_run["glue_dir"], output_dir,
                                 AlbertConfig.from_json_file(sst2_run["config"]), SEQ,
                                 spm_model_file=sst2_run["spm"])
    dev = job.processor.get_dev_examples(sst2_run["glue_dir"])[:24]
    feats = [features.convert_single_example(i, e, job.label_list, SEQ, job.tokenizer, "sst-2")
             for i, e in enumerate(dev)]
    model = classifier_export.load_classifier(job.albert_config, 2,
                                              os.path.join(output_dir, "model.ckpt-best"))
    inputs = {name: np.array([getattr(f, attr) for f in feats], np.int32) for name, attr in
              (("input_ids", "input_ids"), ("input_mask", "input_mask"), ("segment_ids", "segment_ids"))}
    expected = tf.nn.softmax(model(inputs, training=False)["logits"]).numpy()

    raw_dev = _sst2_examples(sst2_run["glue_dir"], "dev")[:24]  # unnormalised text
    request = {
        "serialized": [features.features_to_tf_example(f, False).SerializeToString().hex() for f in feats],
        "ids": {k: v.tolist() for k, v in inputs.items()},
        "text_a": [e.text_a for e in raw_dev], "text_b": [""] * len(raw_dev)}
    request_path = tmp_path / "request.json"
    request_path.write_text(json.dumps(request))
    script = tmp_path / "load.py"
    script.write_text(_FRESH_PROCESS)
    result = run_python([str(script), export_dir, str(request_path)])
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert {"serving_default", "ids", "text"} <= set(out["signatures"])
    for name in ("serving_default", "ids", "text"):
        outputs = out[name]
        assert sorted(outputs) == ["label", "predictions", "probabilities", "threshold"]
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5, err_msg=name)
        assert outputs["predictions"] == expected.argmax(axis=1).tolist()
        assert outputs["label"] == [job.label_list[i] for i in expected.argmax(axis=1)]
        np.testing.assert_allclose(outputs["threshold"], [0.75] * len(dev))

    served = run_python(["serve.py", f"--export_dir={export_dir}", f"--text={raw_dev[0].text_a}",
                        f"--text={raw_dev[1].text_a}"])
    lines = [json.loads(line) for line in served.stdout.splitlines() if line.startswith("{")]
    assert [line["text_a"] for line in lines] == [raw_dev[0].text_a, raw_dev[1].text_a]
    np.testing.assert_allclose([line["probabilities"] for line in lines], expected[:2], atol=1e-5)

    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    shown = subprocess.run([cli, "show", "--all", "--dir", os.path.join(export_dir, versions[0])],
                           capture_output=True, text=True, check=True).stdout
    for signature in ("serving_default", "ids", "text"):
        assert f"signature_def['{signature}']" in shown
    for name in ("serialized_example", "input_ids", "input_mask", "segment_ids", "text_a", "text_b",
                 "probabilities", "predictions", "label", "threshold"):
        assert f"['{name}']" in shown


@pytest.mark.slow
def test_export_without_custom_ops_and_a_separate_preprocessor(sst2_run, tmp_path):
    """--export_raw_text=false --export_preprocessor_dir: preprocessor + ids model = the
    combined model's text signature, and the ids model has no tensorflow_text op."""
    ids_dir, preprocessor_dir = str(tmp_path / "ids"), str(tmp_path / "preprocessor")
    run_python(["run_classifier.py", "--task_name=SST-2", f"--data_dir={sst2_run['glue_dir']}",
               f"--output_dir={sst2_run['output_dir']}", f"--albert_config_file={sst2_run['config']}",
               f"--spm_model_file={sst2_run['spm']}", f"--max_seq_length={SEQ}",
               f"--export_dir={ids_dir}", "--export_raw_text=false",
               f"--export_preprocessor_dir={preprocessor_dir}"])
    (ids_version,), (preprocessor_version,) = os.listdir(ids_dir), os.listdir(preprocessor_dir)
    ids_model = tf.saved_model.load(os.path.join(ids_dir, ids_version))
    assert "text" not in ids_model.signatures
    assert {"serving_default", "ids", "classify"} <= set(ids_model.signatures)
    with open(os.path.join(ids_dir, ids_version, "saved_model.pb"), "rb") as reader:
        assert b"Sentencepiece" not in reader.read()
    texts = [example.text_a for example in _sst2_examples(sst2_run["glue_dir"], "dev")[:16]]
    packed = tf.saved_model.load(os.path.join(preprocessor_dir, preprocessor_version)).signatures[
        "serving_default"](text_a=tf.constant(texts), text_b=tf.constant([""] * len(texts)))
    got = ids_model.signatures["ids"](**packed)["probabilities"].numpy()
    (combined_version,) = [name for name in os.listdir(sst2_run["export_dir"]) if name.isdigit()]
    combined = tf.saved_model.load(os.path.join(sst2_run["export_dir"], combined_version))
    expected = combined.signatures["text"](text_a=tf.constant(texts),
                                           text_b=tf.constant([""] * len(texts)))["probabilities"]
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)


@pytest.mark.slow
def test_stsb_regression_beats_zero_correlation(real_data, spm_model_file, albert_config_file,
                                                tmp_path):
    glue_dir = str(tmp_path / "glue")
    movie_reviews.write_stsb_task(real_data["movie_reviews"], os.path.join(glue_dir, "STS-B"))
    output_dir = str(tmp_path / "out")
    job = glue_run.ClassifierJob("sts-b", glue_dir, output_dir,
                                 AlbertConfig.from_json_file(albert_config_file), SEQ,
                                 spm_model_file=spm_model_file)
    assert job.num_labels == 1 and job.regression
    keras.utils.set_random_seed(1)
    config = loop.TrainingConfig(output_dir=output_dir, train_batch_size=32, num_train_steps=400,
                                 num_warmup_steps=40, learning_rate=3e-4, save_checkpoints_steps=200,
                                 iterations_per_loop=50)
    plan = job.plan(fine_tuning.FlowOptions(output_dir, do_train=True, do_eval=True,
                                            do_predict=True), config)
    trainer = job.build_trainer(tf.distribute.get_strategy(), plan)
    summary = evaluation.train_and_evaluate(trainer, lambda path: job.evaluate(trainer, path, 64),
                                            True, True, plan.last_step)
    blocks = _eval_blocks(os.path.join(output_dir, "eval_results.txt"))
    assert [b["global_step"] for b in blocks] == [200, 400]
    assert {"pearson", "spearman", "MSE", "eval_loss"} <= set(blocks[-1])
    assert summary["best_value"] == max(b["pearson"] for b in blocks)
    assert summary["best_value"] > 0.3, blocks

    (results_path, submit_path), _ = job.predict(trainer, job.best_checkpoint(), batch_size=64)
    test_examples = job.processor.get_test_examples(glue_dir)
    scores = np.loadtxt(results_path, delimiter="\t", ndmin=1)
    assert scores.shape == (len(test_examples),)
    with open(submit_path) as reader:
        rows = [line.rstrip("\n").split("\t") for line in reader]
    assert rows[0] == ["index", "prediction"]
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], scores, rtol=1e-6)
    truth = {r.id: movie_reviews.stsb_score(r.score)
             for r in movie_reviews.read_reviews(real_data["movie_reviews"])}
    gold = [truth[r[0]] for r in rows[1:]]
    assert np.corrcoef(gold, scores)[0, 1] > 0.3

    exported = classifier_export.export_from_checkpoint(
        job, os.path.join(output_dir, "model.ckpt-best"), str(tmp_path / "export"))
    text = tf.saved_model.load(exported).signatures["text"]
    raw = job.processor.__class__(use_spm=False).get_test_examples(glue_dir)[:8]
    outputs = text(text_a=tf.constant([e.text_a for e in raw]), text_b=tf.constant([""] * 8))
    assert outputs["probabilities"].shape == (8, 1) and outputs["label"].dtype == tf.float32
    np.testing.assert_allclose(outputs["label"].numpy(), outputs["predictions"].numpy())
    np.testing.assert_allclose(outputs["predictions"].numpy(), scores[:8], atol=1e-5)


@pytest.fixture
def wordpiece_vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
    return str(path)


@pytest.mark.slow
def test_warm_start_from_a_run_pretraining_checkpoint(real_data, spm_model_file, albert_config_file,
                                                      pretrained_dir, tmp_path):
    """--init_checkpoint=<run_pretraining output dir>: every encoder variable comes from its
    latest checkpoint; the GLUE head (absent there) starts fresh; MLM/SOP heads are unused."""
    glue_dir = str(tmp_path / "glue")
    movie_reviews.write_sst2_task(real_data["movie_reviews"], os.path.join(glue_dir, "SST-2"))
    job = glue_run.ClassifierJob("sst-2", glue_dir, str(tmp_path / "out"),
                                 AlbertConfig.from_json_file(albert_config_file), SEQ,
                                 spm_model_file=spm_model_file)
    job.check_init_checkpoint(pretrained_dir, allow_random_init=False, do_train=True)
    config = loop.TrainingConfig(output_dir=str(tmp_path / "out"), train_batch_size=8,
                                 num_train_steps=1, init_checkpoint=pretrained_dir)
    trainer = job.build_trainer(tf.distribute.get_strategy(), fine_tuning.RunPlan(config, {}))
    head_before = trainer.model.checkpoint_variables()["output_weights"].numpy()
    trainer.restore_or_initialize()
    pretrained = checkpoints.read_tensors(pretrained_dir)
    assert any(name.startswith("cls/") for name in pretrained)
    encoder = {n: v for n, v in trainer.model.checkpoint_variables().items() if n.startswith("bert/")}
    assert len(encoder) > 20
    for name, variable in encoder.items():
        np.testing.assert_array_equal(variable.numpy(), pretrained[name], err_msg=name)
    np.testing.assert_array_equal(trainer.model.checkpoint_variables()["output_weights"].numpy(),
                                  head_before)


def test_max_seq_length_above_max_position_embeddings(tiny_config, wordpiece_vocab, tmp_path):
    with pytest.raises(errors.UserInputError,
                       match="--max_seq_length must be <= max_position_embeddings"):
        glue_run.ClassifierJob("cola", str(tmp_path), str(tmp_path), tiny_config, 65,
                               vocab_file=wordpiece_vocab)
    with pytest.raises(errors.UserInputError, match="--spm_model_file"):
        glue_run.ClassifierJob("cola", str(tmp_path), str(tmp_path), tiny_config, 64)


def test_training_needs_an_init_checkpoint(tiny_config, wordpiece_vocab, tmp_path):
    job = glue_run.ClassifierJob("cola", str(tmp_path), str(tmp_path / "out"), tiny_config, 32,
                                 vocab_file=wordpiece_vocab)
    with pytest.raises(errors.UserInputError, match="--allow_random_init"):
        job.check_init_checkpoint(None, allow_random_init=False, do_train=True)
    job.check_init_checkpoint(None, allow_random_init=True, do_train=True)
    job.check_init_checkpoint(None, allow_random_init=False, do_train=False)
    with pytest.raises(checkpoints.CheckpointNotFoundError, match="nowhere"):
        job.check_init_checkpoint(str(tmp_path / "nowhere"), allow_random_init=False, do_train=True)


def test_predict_without_any_checkpoint(tmp_path):
    with pytest.raises(errors.UserInputError, match="no model.ckpt-best and no checkpoint"):
        fine_tuning.best_checkpoint(str(tmp_path))


@pytest.mark.slow
def test_script_rejects_unknown_task_and_names_the_valid_ones(tmp_path, albert_config_file, spm_model_file):
    result = run_python(["run_classifier.py", "--task_name=sst2", f"--data_dir={tmp_path}",
                        f"--output_dir={tmp_path / 'out'}", f"--albert_config_file={albert_config_file}",
                        f"--spm_model_file={spm_model_file}", "--do_train"], check=False)
    assert result.returncode != 0
    assert "--task_name='sst2' is not a GLUE task; valid names: ax, cola, mismnli, mnli, mrpc, " \
           "qnli, qqp, rte, sst-2, sts-b, wnli" in result.stderr


@pytest.mark.slow
def test_a_frozen_encoder_stays_at_its_checkpoint_while_the_head_learns(
        real_data, spm_model_file, albert_config_file, pretrained_dir, tmp_path):
    """run_classifier.py --encoder_learning_rate_multiplier=0: after two training steps every
    bert/... variable is exactly the warm-start checkpoint's; the new head has moved."""
    glue_dir = str(tmp_path / "glue")
    movie_reviews.write_sst2_task(real_data["movie_reviews"], os.path.join(glue_dir, "SST-2"))
    output_dir = str(tmp_path / "out")
    run_python(["run_classifier.py", "--task_name=sst-2", f"--data_dir={glue_dir}",
                f"--albert_config_file={albert_config_file}", f"--spm_model_file={spm_model_file}",
                f"--output_dir={output_dir}", f"--init_checkpoint={pretrained_dir}", "--do_train",
                f"--max_seq_length={SEQ}", "--train_batch_size=8", "--learning_rate=1e-3",
                "--train_step=2", "--warmup_step=0", "--save_checkpoints_steps=2",
                "--iterations_per_loop=2", "--encoder_learning_rate_multiplier=0"])
    pretrained, tuned = checkpoints.read_tensors(pretrained_dir), checkpoints.read_tensors(output_dir)
    encoder = [name for name in tuned if name.startswith("bert/") and "adam_" not in name]
    assert len(encoder) > 20
    for name in encoder:
        np.testing.assert_array_equal(tuned[name], pretrained[name], err_msg=name)
    assert np.abs(tuned["output_weights"]).max() > 0 and "output_weights" not in pretrained
    assert np.abs(tuned["output_weights/adam_m"]).max() > 0  # the head took its two steps


def test_a_negative_encoder_learning_rate_multiplier_is_refused():
    config = loop.TrainingConfig(output_dir="unused", train_batch_size=8, num_train_steps=1,
                                 encoder_learning_rate_multiplier=-0.5)
    with pytest.raises(errors.UserInputError, match="--encoder_learning_rate_multiplier must be >= 0"):
        config.validate(1)
