"""run_race.py end to end on RACE data written in both layouts.

A tiny randomly initialised ALBERT is fine-tuned (train + evaluate every checkpoint) by one
run; a second run, with neither --do_train nor --do_eval and no TPU (the original's NameError), scores the test split with model.ckpt-best and exports a SavedModel, which a fresh
process loads and compares with the test predictions and with the same model scored under
MirroredStrategy on two logical CPUs.
"""

import collections
import json
import math
import os

import numpy as np
import tensorflow as tf
import pytest

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.race import reader
from tests import race_fixtures
from tests.conftest import run_python

SEQ = 64
MODEL = {"embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": SEQ,
         "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
TRAIN_ARTICLES, TEST_ARTICLES = 24, 6  # per level; 3 questions each


def _key_values(path):
    """eval_results.txt / predict_results.txt → list of {key: value} blocks (one per eval)."""
    blocks, current = [], collections.OrderedDict()
    for line in open(path, encoding="utf-8"):
        key, value = (part.strip() for part in line.split("=", 1))
        if key == "eval_accuracy" and current:
            blocks.append(current)
            current = collections.OrderedDict()
        current[key] = value
    blocks.append(current)
    return blocks


@pytest.fixture(scope="module")
def race_run(spm_model_file, tmp_path_factory):
    work = tmp_path_factory.mktemp("race")
    data_dir, output_dir = str(work / "data"), str(work / "out")
    train = race_fixtures.make_articles(TRAIN_ARTICLES, seed=1)
    race_fixtures.write_per_article(data_dir, "train", train)
    race_fixtures.write_all_txt(data_dir, "dev", train)  # dev = the training questions
    race_fixtures.write_per_article(data_dir, "test",
                                    race_fixtures.make_articles(TEST_ARTICLES, seed=3))
    vocab_size = sum(1 for _ in open(spm_model_file[:-len(".model")] + ".vocab", encoding="utf-8"))
    config_file = str(work / "albert_config.json")
    AlbertConfig.from_dict(dict(MODEL, vocab_size=vocab_size)).to_json_file(config_file)
    common = [f"--data_dir={data_dir}", f"--output_dir={output_dir}",
              f"--albert_config_file={config_file}", f"--spm_model_file={spm_model_file}",
              f"--max_seq_length={SEQ}", "--max_qa_length=16"]
    run_python(["run_race.py", *common, "--allow_random_init", "--train_step=150",
               "--warmup_step=10", "--learning_rate=1e-3", "--train_batch_size=8",
               "--eval_batch_size=5", "--save_checkpoints_steps=50", "--iterations_per_loop=50",
               "--num_keep_checkpoint=1", f"--train_file={work / 'cache' / 'train.tf_record'}",
               "--seed=1"])  # unseeded, one run in many collapsed to uniform scores by step 150
    export_dir = str(work / "export")
    run_python(["run_race.py", *common, "--nodo_train", "--nodo_eval", "--do_predict",
               "--predict_batch_size=7", f"--predict_file={work / 'cache' / 'test.tf_record'}",
               f"--export_dir={export_dir}"])
    return {"work": work, "data_dir": data_dir, "output_dir": output_dir, "export_dir": export_dir,
            "config_file": config_file, "common": common}


@pytest.mark.slow
def test_every_checkpoint_is_evaluated_and_the_training_questions_are_learned(race_run):
    output_dir = race_run["output_dir"]
    blocks = _key_values(os.path.join(output_dir, "eval_results.txt"))
    # --num_keep_checkpoint=1 prunes on disk, yet every checkpoint was evaluated on saving.
    assert [int(b["global_step"]) for b in blocks] == [50, 100, 150]
    accuracies = [float(b["eval_accuracy"]) for b in blocks]
    assert max(accuracies) >= 0.8, accuracies  # chance is 0.25
    assert float(blocks[-1]["eval_loss"]) < math.log(4) / 2
    best_step = int(blocks[-1]["best_global_step"])
    assert accuracies[[50, 100, 150].index(best_step)] == max(accuracies)
    assert float(blocks[-1]["best_eval_accuracy"]) == max(accuracies)
    last, step, value = open(os.path.join(output_dir, "best_trial.txt")).read().split(":")
    assert (int(last), int(step), float(value)) == (150, best_step, max(accuracies))
    best = checkpoints.read_tensors(os.path.join(output_dir, "model.ckpt-best"),
                                    ["global_step", "output_weights", "output_bias"])
    assert int(best["global_step"]) == best_step
    assert best["output_weights"].shape == (1, MODEL["hidden_size"])
    kept = sorted(name for name in os.listdir(output_dir) if name.endswith(".index"))
    assert kept == ["model.ckpt-150.index", "model.ckpt-best.index"]
    caches = sorted(os.listdir(race_run["work"] / "cache"))
    assert [name.split(".")[0] for name in caches] == ["test", "train"]
    assert caches[1].startswith(f"train.race-train-middle+high-seq{SEQ}-qa16-uncased-vocab")
    assert any(n.startswith("race-dev-middle+high-seq64") for n in os.listdir(output_dir))


@pytest.mark.slow
def test_the_level_breakdown_adds_up(race_run):
    blocks = _key_values(os.path.join(race_run["output_dir"], "eval_results.txt"))
    blocks += _key_values(os.path.join(race_run["output_dir"], "predict_results.txt"))
    for block, total in zip(blocks, [TRAIN_ARTICLES * 6] * 3 + [TEST_ARTICLES * 6]):
        counts = {level: int(block[f"eval_num_{level}"]) for level in reader.LEVELS}
        assert counts == {"middle": total // 2, "high": total // 2}
        weighted = sum(float(block[f"eval_accuracy_{level}"]) * counts[level]
                       for level in reader.LEVELS) / total
        assert weighted == pytest.approx(float(block["eval_accuracy"]))
        loss = sum(float(block[f"eval_loss_{level}"]) * counts[level]
                   for level in reader.LEVELS) / total
        assert loss == pytest.approx(float(block["eval_loss"]))


def _test_predictions(output_dir):
    lines = open(os.path.join(output_dir, "test_predictions.tsv"), encoding="utf-8").read().splitlines()
    header = lines[0].split("\t")
    assert header == ["id", "question", "level", "answer", "prediction",
                      "prob_A", "prob_B", "prob_C", "prob_D"]
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


@pytest.mark.slow
def test_predict_without_tpu_scores_the_test_split_with_the_best_checkpoint(race_run):
    output_dir = race_run["output_dir"]
    [results] = _key_values(os.path.join(output_dir, "predict_results.txt"))
    eval_blocks = _key_values(os.path.join(output_dir, "eval_results.txt"))
    assert int(results["global_step"]) == int(eval_blocks[-1]["best_global_step"])
    assert results["checkpoint"].endswith("model.ckpt-best")
    assert float(results["best_dev_eval_accuracy"]) == float(eval_blocks[-1]["best_eval_accuracy"])
    rows = _test_predictions(output_dir)
    test = race_fixtures.make_articles(TEST_ARTICLES, seed=3)
    expected_ids = [(a["id"], str(q), level, a["answers"][q])
                    for level in reader.LEVELS for a in test[level] for q in range(3)]
    assert [(r["id"], r["question"], r["level"], r["answer"]) for r in rows] == expected_ids
    correct = [r["answer"] == r["prediction"] for r in rows]
    assert float(results["eval_accuracy"]) == pytest.approx(np.mean(correct))
    for level in reader.LEVELS:
        level_correct = [c for c, r in zip(correct, rows) if r["level"] == level]
        assert float(results[f"eval_accuracy_{level}"]) == pytest.approx(np.mean(level_correct))
    for row in rows:
        probabilities = [float(row[f"prob_{letter}"]) for letter in "ABCD"]
        assert sum(probabilities) == pytest.approx(1.0, abs=1e-5)
        assert "ABCD"[int(np.argmax(probabilities))] == row["prediction"]
    # Held-out articles, same kind of questions: the model generalises.
    assert float(results["eval_accuracy"]) >= 0.6


@pytest.mark.slow
def test_export_loads_in_a_fresh_process_and_gives_the_same_scores(race_run):
    export_dir, output_dir = race_run["export_dir"], race_run["output_dir"]
    versions = [name for name in os.listdir(export_dir) if not name.startswith(".")]
    assert len(versions) == 1 and versions[0].isdigit()
    test_cache = next(str(race_run["work"] / "cache" / n)
                      for n in os.listdir(race_run["work"] / "cache") if n.startswith("test."))
    done = run_python([os.path.join("tests", "race_fresh_process.py"),
                      os.path.join(export_dir, versions[0]),
                      os.path.join(output_dir, "model.ckpt-best"), race_run["config_file"],
                      test_cache, str(SEQ), race_run["data_dir"]])
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["signature_inputs"] == ["input_ids", "input_mask", "segment_ids"]
    assert result["input_dtypes"] == ["int32"]
    serving = {name: np.array(value) for name, value in result["serving"].items()}
    assert serving["logits"].shape == (TEST_ARTICLES * 6, 4)
    rows = _test_predictions(output_dir)
    written = np.array([[float(r[f"prob_{letter}"]) for letter in "ABCD"] for r in rows])
    np.testing.assert_allclose(serving["probabilities"], written, atol=2e-6)
    assert ["ABCD"[p] for p in serving["predictions"]] == [r["prediction"] for r in rows]
    # The raw-text signature encodes the questions in the graph exactly as the Python path.
    np.testing.assert_allclose(np.array(result["text_logits"]), serving["logits"], atol=1e-5)
    assert result["replicas"] == 2
    np.testing.assert_allclose(np.array(result["mirrored_logits"]), serving["logits"],
                               rtol=1e-5, atol=1e-5)
    assert ["ABCD"[label] for label in result["mirrored_labels"]] == [r["answer"] for r in rows]


@pytest.mark.slow
def test_export_without_the_raw_text_signature_has_no_custom_op(race_run, tmp_path):
    run_python(["run_race.py", *race_run["common"], "--nodo_train", "--nodo_eval",
               f"--export_dir={tmp_path}", "--export_raw_text=false"])
    (version,) = os.listdir(tmp_path)
    with open(os.path.join(tmp_path, version, "saved_model.pb"), "rb") as reader:
        assert b"Sentencepiece" not in reader.read()
    with open(os.path.join(race_run["export_dir"], os.listdir(race_run["export_dir"])[0],
                           "saved_model.pb"), "rb") as reader:
        assert b"Sentencepiece" in reader.read()  # the combined export, for contrast
    assert set(tf.saved_model.load(os.path.join(tmp_path, version)).signatures) == {"serving_default"}


@pytest.mark.slow
def test_usage_errors_name_the_flags(race_run):
    done = run_python(["run_race.py", *race_run["common"], "--high_only", "--middle_only"],
                     check=False)
    assert done.returncode != 0
    assert "--high_only and --middle_only exclude each other" in done.stderr
