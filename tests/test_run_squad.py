"""run_squad.py end to end on tiny models: learning, every checkpoint scored, the v2 threshold,
predict-only runs, the original's bugs fixed, SavedModel / TFLite / raw-text export."""

import glob
import json
import os
import subprocess
import sys
import time

from ai_edge_litert import interpreter as litert
import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import app, flags

from albert_tf.scripts import run_squad
from albert_tf.config import AlbertConfig
from albert_tf.export import squad as squad_export
from albert_tf.squad import prediction, records
from albert_tf.training import evaluation

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ = 64

PARAGRAPHS = [
    ("The Nile flows north through Egypt into the Mediterranean Sea. The Amazon carries more "
     "water than any other river.",
     [("Where does the Nile flow into?", "the Mediterranean Sea"),
      ("Which river carries the most water?", "The Amazon"),
      ("Who built the Amazon?", None)]),
    ("Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in physics in 1903 and "
     "in chemistry in 1911.",
     [("Where was Marie Curie born?", "Warsaw"),
      ("When did she win the prize in chemistry?", "1911"),
      ("What did Marie Curie eat for dinner?", None)]),
    ("The library opened in 1895 with twelve thousand books. Its first director was John "
     "Hale, a teacher from Boston.",
     [("Who was the first director?", "John Hale"),
      ("How many books did the library open with?", "twelve thousand"),
      ("How tall is the library?", None)]),
]


def squad_json(version_2):
    """The official layout; v2.0 with `is_impossible` and `plausible_answers`."""
    articles = []
    for p, (context, questions) in enumerate(PARAGRAPHS):
        qas = []
        for q, (question, answer) in enumerate(questions):
            entry = {"id": f"p{p}q{q}", "question": question}
            if answer is None:
                if not version_2:
                    continue
                entry.update(answers=[], is_impossible=True, plausible_answers=[])
            else:
                entry["answers"] = [{"text": answer, "answer_start": context.index(answer)}]
                if version_2:
                    entry["is_impossible"] = False
            qas.append(entry)
        articles.append({"title": f"article{p}", "paragraphs": [{"context": context,
                                                                  "qas": qas}]})
    data = {"data": articles}
    if version_2:
        data["version"] = "v2.0"
    return data


@pytest.fixture(scope="module")
def files(tmp_path_factory, spm_model_file):
    root = tmp_path_factory.mktemp("squad_run")
    config = dict(vocab_size=4000, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                  num_hidden_groups=1, inner_group_num=1, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=SEQ, type_vocab_size=2,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    paths = {"config": root / "albert_config.json", "v1": root / "v1.json",
             "v2": root / "v2.json", "root": root}
    paths["config"].write_text(json.dumps(config))
    paths["v1"].write_text(json.dumps(squad_json(False)))
    paths["v2"].write_text(json.dumps(squad_json(True)))
    paths["spm"] = spm_model_file
    return {k: str(v) for k, v in paths.items()}


def run(files, output_dir, *extra):
    flag_values = flags.FlagValues()
    run_squad.define_flags(flag_values)
    flag_values(["run_squad.py", f"--albert_config_file={files['config']}",
                 f"--spm_model_file={files['spm']}", f"--output_dir={output_dir}",
                 f"--max_seq_length={SEQ}", "--doc_stride=32", "--max_query_length=16",
                 "--train_batch_size=8", "--predict_batch_size=16", "--learning_rate=2e-3",
                 "--num_train_epochs=400", "--save_checkpoints_steps=150",
                 "--iterations_per_loop=150", "--dropout_prob=0.0", "--allow_random_init",
                 *extra])
    return run_squad.run(flag_values)


def train_args(files, version_2):
    data = files["v2" if version_2 else "v1"]
    args = [f"--train_file={data}", f"--predict_file={data}", "--do_train", "--do_predict"]
    return args + (["--version_2_with_negative"] if version_2 else [])


def gold_answers(version_2):
    return {f"p{p}q{q}": answer or ""
            for p, (_, questions) in enumerate(PARAGRAPHS)
            for q, (_, answer) in enumerate(questions) if version_2 or answer is not None}


def eval_batch(output_dir):
    (record_file,) = glob.glob(os.path.join(output_dir, "eval.*.tf_record"))
    return next(iter(records.tfrecord_dataset(record_file, SEQ, False).batch(32)))


def check_exports(files, output_dir, version_2, batch):
    """SavedModel and TFLite outputs equal the in-process model's on real features."""
    model = squad_export.load_squad_model(
        AlbertConfig.from_json_file(files["config"]),
        os.path.join(output_dir, "model.ckpt-best"), version_2)
    inputs = [batch[name] for name in squad_export.MODEL_INPUTS]
    expected = {k: v.numpy() for k, v in squad_export.model_outputs(model, version_2,
                                                                    *inputs).items()}
    (saved_model,) = glob.glob(os.path.join(output_dir, "export", "saved_model", "*"))
    loaded = tf.saved_model.load(saved_model)
    served = loaded.signatures["serving_default"](
        **{name: batch[name] for name in squad_export.MODEL_INPUTS})
    assert set(served) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(served[name].numpy(), value, atol=1e-4, err_msg=name)
    interpreter = litert.Interpreter(
        model_path=os.path.join(output_dir, "export", "albert_model.tflite"))
    runner = interpreter.get_signature_runner()
    for row in range(3):
        lite = runner(**{name: batch[name][row:row + 1].numpy()
                         for name in squad_export.MODEL_INPUTS})
        assert set(lite) == set(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(lite[name][0], value[row], atol=1e-4, err_msg=name)
    return loaded


def ask(loaded, version_2):
    questions, contexts, golds = [], [], []
    for context, qas in PARAGRAPHS:
        for question, answer in qas:
            if version_2 or answer is not None:
                questions.append(question)
                contexts.append(context)
                golds.append(answer or "")
    result = loaded.signatures["answer"](question=tf.constant(questions),
                                         context=tf.constant(contexts))
    return [a.decode("utf-8") for a in result["answer"].numpy()], golds, result


@pytest.mark.slow
def test_v2_learns_answerable_and_unanswerable_questions_and_exports(files, tmp_path):
    keras.utils.set_random_seed(1)
    out = str(tmp_path / "v2")
    # Only one checkpoint is kept on disk: each is scored as it is saved, before pruning.
    results = run(files, out, *train_args(files, True), f"--export_dir={out}/export",
                  "--keep_checkpoint_max=1")
    # 9 examples × 400 epochs / batch 8 = 450 steps, checkpoints at 150, 300, 450.
    assert results["exact"] >= 90 and results["f1"] >= 90
    assert results["HasAns_exact"] >= 90 and results["NoAns_exact"] >= 90
    assert results["null_threshold_chosen_on"] == prediction.TUNED_ON_PREDICT_SET
    assert results["total"] == 9 and results["HasAns_total"] == 6

    predictions = json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8"))
    null_odds = json.load(open(os.path.join(out, "null_odds.json"), encoding="utf-8"))
    nbest = json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8"))
    gold = gold_answers(True)
    assert set(predictions) == set(null_odds) == set(nbest) == set(gold)
    assert sum(predictions[q] == gold[q] for q in gold) >= 0.9 * len(gold)
    assert all(isinstance(v, float) for v in null_odds.values())
    assert all(set(e) == {"text", "probability", "start_log_prob", "end_log_prob"}
               for entries in nbest.values() for e in entries)

    text = open(os.path.join(out, "eval_results.txt"), encoding="utf-8").read()
    steps = [int(line.split("=")[1]) for line in text.splitlines()
             if line.startswith("global_step =")]
    best_step = int(open(os.path.join(out, "best_trial.txt")).read().split(":")[1])
    assert steps == [150, 300, 450, best_step]  # every checkpoint, then the best once more
    assert [step for step, _ in evaluation.list_checkpoints(out)] == [450]
    assert f"best perf happened at step: {best_step}" in text
    assert text.count("null_threshold_chosen_on = predict_file (tuned on the evaluated set, "
                      "not held out)") == 4
    assert os.path.exists(os.path.join(out, "model.ckpt-best.index"))

    loaded = check_exports(files, out, True, eval_batch(out))
    answers, golds, raw = ask(loaded, True)
    assert sum(a == g for a, g in zip(answers, golds)) >= 0.9 * len(golds)
    assert raw["null_score"].shape == (9,) and raw["score"].dtype == tf.float32

    # Predict-only, no --train_file (the original v1 crashed, v2 needed it): the checkpoints
    # present are scored and the run ends; the threshold comes from the set the flag names.
    started = time.time()
    held = run(files, out, f"--predict_file={files['v2']}", "--do_predict",
               "--version_2_with_negative", f"--threshold_predict_file={files['v2']}")
    assert held["null_threshold_chosen_on"] == f"threshold_predict_file {files['v2']}"
    assert held["null_score_diff_threshold"] == pytest.approx(
        results["null_score_diff_threshold"], abs=1e-4)
    fixed = run(files, out, f"--predict_file={files['v2']}", "--do_predict",
                "--version_2_with_negative", "--null_score_diff_threshold=1e9")
    assert fixed["NoAns_exact"] == 0.0  # nothing is ever null at that threshold
    assert fixed["null_threshold_chosen_on"] == "--null_score_diff_threshold"
    assert time.time() - started < 120


@pytest.mark.slow
def test_v1_learns_and_exports_savedmodel_tflite_and_raw_text_answers(files, tmp_path):
    keras.utils.set_random_seed(2)
    out = str(tmp_path / "v1")
    # Trained on the v2.0 file: its unanswerable questions get [CLS] labels in v1 too (as the
    # original's shared reader), which keeps the tiny model from ignoring the question (on
    # the answerable ones alone it often stalls answering both questions of a paragraph
    # alike). Scored on the answerable questions, the v1.1 file.
    results = run(files, out, f"--train_file={files['v2']}", f"--predict_file={files['v1']}",
                  "--do_train", "--do_predict", "--num_train_epochs=700",
                  "--save_checkpoints_steps=400", "--iterations_per_loop=400",
                  f"--export_dir={out}/export", "--use_einsum=true")
    assert set(results) == {"exact_match", "f1", "global_step"}
    assert results["exact_match"] >= 90
    assert not os.path.exists(os.path.join(out, "null_odds.json"))
    nbest = json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8"))
    assert all(set(e) == {"text", "probability", "start_logit", "end_logit"}
               for entries in nbest.values() for e in entries)
    predictions = json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8"))

    loaded = check_exports(files, out, False, eval_batch(out))
    answers, golds, raw = ask(loaded, False)
    assert sum(a == g for a, g in zip(answers, golds)) >= 0.9 * len(golds)
    # The in-graph decoder agrees with the Python post-processing (one window each here).
    assert answers == [predictions[q] for q in gold_answers(False)]
    assert np.all(np.isfinite(raw["score"].numpy()))

    # --export_raw_text=false: no `answer` signature, so no tensorflow_text op in the graph.
    run(files, out, f"--export_dir={out}/plain_export", "--export_raw_text=false")
    (version,) = [name for name in os.listdir(f"{out}/plain_export/saved_model") if name.isdigit()]
    with open(f"{out}/plain_export/saved_model/{version}/saved_model.pb", "rb") as reader:
        assert b"Sentencepiece" not in reader.read()

    # --export_precision=int8: the trained model's int8 model.tflite in the version, answering
    # the eval batch with the float32 SavedModel's best spans.
    run(files, out, f"--export_dir={out}/int8_export", "--export_precision=int8")
    (version,) = [name for name in os.listdir(f"{out}/int8_export/saved_model") if name.isdigit()]
    version_dir = f"{out}/int8_export/saved_model/{version}"
    from albert_tf.serving import tflite_servable
    batch = eval_batch(out)
    columns = {name: np.asarray(batch[name], np.int32) for name in squad_export.MODEL_INPUTS}
    reference = tf.saved_model.load(version_dir).signatures["serving_default"](
        **{name: tf.constant(value) for name, value in columns.items()})
    answer = tflite_servable.load_runner(version_dir, "squad", 1, max_batch_size=32).run(
        "serving_default", columns)
    for key in ("start_logits", "end_logits"):
        np.testing.assert_array_equal(np.argmax(answer[key], 1),
                                      np.argmax(reference[key].numpy(), 1))


def test_bad_flags_are_clear_errors(files, tmp_path):
    out = str(tmp_path / "bad")
    with pytest.raises(app.UsageError, match="do_train.*do_predict.*export_dir"):
        run(files, out)
    with pytest.raises(ValueError, match="--do_train needs --train_file"):
        run(files, out, "--do_train")
    with pytest.raises(ValueError, match="--do_predict needs --predict_file"):
        run(files, out, "--do_predict")
    with pytest.raises(ValueError, match=r"--max_seq_length=128 exceeds max_position_embed"):
        run(files, out, "--do_predict", f"--predict_file={files['v1']}",
            "--max_seq_length=128")
    with pytest.raises(ValueError, match="only with --version_2_with_negative"):
        run(files, out, "--do_predict", f"--predict_file={files['v1']}",
            "--null_score_diff_threshold=0")
    with pytest.raises(app.UsageError, match="albert_hub_module_handle is not supported"):
        run(files, out, "--do_predict", "--albert_hub_module_handle=https://tfhub.dev/x")
    with pytest.raises(ValueError, match="no model.ckpt-<step> in .* and no --init_checkpoint"):
        run(files, out, "--do_predict", f"--predict_file={files['v1']}")
    # bfloat16 is the classifier's only: the flag names itself and SQuAD's precisions.
    with pytest.raises(flags.IllegalFlagValueError,
                       match="export_precision.*float32.*int8"):
        run(files, out, f"--export_dir={out}/export", "--export_precision=bfloat16")


@pytest.mark.slow
def test_evaluation_stops_when_the_last_step_never_comes(files, tmp_path):
    """With --train_file the last step is known; if no such checkpoint ever appears the
    run stops after --eval_timeout_secs instead of polling for ever."""
    out = str(tmp_path / "stop")
    keras.utils.set_random_seed(3)
    run(files, out, f"--train_file={files['v1']}", "--do_train", "--num_train_epochs=4")
    started = time.time()
    results = run(files, out, f"--train_file={files['v1']}", f"--predict_file={files['v1']}",
                  "--do_predict", "--num_train_epochs=40", "--eval_timeout_secs=2")
    assert time.time() - started < 60
    assert results is not None and "f1" in results  # step 3 scored and kept as the best
    # Predict-only into an empty directory scores a fine-tuned --init_checkpoint once.
    other = str(tmp_path / "other")
    again = run(files, other, f"--predict_file={files['v1']}", "--do_predict",
                f"--init_checkpoint={out}/model.ckpt-best")
    assert again["f1"] == pytest.approx(results["f1"])
    text = open(os.path.join(other, "eval_results.txt"), encoding="utf-8").read()
    assert f"checkpoint = {out}/model.ckpt-best" in text and "f1 = " in text


@pytest.mark.slow
def test_script_runs_from_the_command_line(files, tmp_path):
    command = [sys.executable, os.path.join(REPO_ROOT, "run_squad.py"),
               f"--albert_config_file={files['config']}", f"--spm_model_file={files['spm']}",
               f"--output_dir={tmp_path}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert done.returncode != 0
    assert "At least one of --do_train, --do_predict or --export_dir" in done.stderr


ORIGINAL_FLAG_DEFAULTS = {  # run_squad_v1.py and run_squad_v2.py
    "albert_config_file": None, "vocab_file": None, "spm_model_file": None, "output_dir": None,
    "train_file": None, "predict_file": None, "train_feature_file": None,
    "predict_feature_file": None, "predict_feature_left_file": None, "init_checkpoint": None,
    "albert_hub_module_handle": None, "do_lower_case": True, "max_seq_length": 384,
    "doc_stride": 128, "max_query_length": 64, "do_train": False, "do_predict": False,
    "train_batch_size": 32, "predict_batch_size": 8, "learning_rate": 5e-5,
    "num_train_epochs": 3.0, "warmup_proportion": 0.1, "save_checkpoints_steps": 1000,
    "iterations_per_loop": 1000, "n_best_size": 20, "max_answer_length": 30,
    "use_tpu": False, "tpu_name": None, "tpu_zone": None, "gcp_project": None, "master": None,
    "num_tpu_cores": 8, "use_einsum": True, "export_dir": None, "start_n_top": 5,
    "end_n_top": 5, "dropout_prob": 0.1,
}


def test_every_original_flag_exists_with_its_default():
    flag_values = flags.FlagValues()
    run_squad.define_flags(flag_values)
    for name, default in ORIGINAL_FLAG_DEFAULTS.items():
        assert name in flag_values, name
        assert flag_values[name].default == default, name
    new = {"version_2_with_negative": False, "threshold_predict_file": None,
           "null_score_diff_threshold": None, "eval_timeout_secs": 7200.0,
           "export_precision": "float32"}
    for name, default in new.items():
        assert flag_values[name].default == default, name
    # Every run option comes from a flag of the same name.
    assert all(name in flag_values for name in run_squad.squad_run.SquadRun.__dataclass_fields__)


def _unlabelled(path, out_path):
    data = json.load(open(path, encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for key in ("answers", "is_impossible", "plausible_answers"):
                    qa.pop(key, None)
    out_path.write_text(json.dumps(data))
    return str(out_path)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_unlabelled_predict_file_is_predicted_not_scored(files, tmp_path, version):
    """A test set has no answers: predictions are written, scoring is skipped (the original
    allowed this); v2 uses the 0.0 default threshold when nothing else is given."""
    out = str(tmp_path / "out")
    v2 = ["--version_2_with_negative"] if version == "v2" else []
    run(files, out, f"--train_file={files[version]}", "--do_train", "--num_train_epochs=2", *v2)
    test_file = _unlabelled(files[version], tmp_path / "test.json")
    results = run(files, out, f"--predict_file={test_file}", "--do_predict", *v2)
    predictions = json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8"))
    expected_ids = {qa["id"] for article in squad_json(version == "v2")["data"]
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
    assert set(predictions) == expected_ids
    assert all(isinstance(text, str) for text in predictions.values())
    if version == "v2":
        assert results == {"null_score_diff_threshold": 0.0}
        assert os.path.exists(os.path.join(out, "null_odds.json"))
    else:
        assert results is None
    assert not os.path.exists(os.path.join(out, "eval_results.txt"))


def test_the_job_plans_once_and_keeps_no_state_between_hooks(files, tmp_path):
    """`plan` computes the records, steps, warm-up and last step in one call and returns them;
    the job's attributes are the same before and after it (nothing set for a later hook)."""
    from albert_tf.squad import run as squad_run
    from albert_tf.training import fine_tuning, loop
    options = squad_run.SquadRun(version_2_with_negative=True, train_file=files["v2"],
                                 predict_file=files["v2"], num_train_epochs=4, doc_stride=32,
                                 max_query_length=16)
    job = squad_run.SquadJob(options, str(tmp_path), AlbertConfig.from_json_file(files["config"]),
                             SEQ, files["spm"])
    before = dict(vars(job))
    flow = job.flow_options(str(tmp_path), True, True, 16, init_checkpoint="init/model.ckpt-3")
    plan = job.plan(flow, loop.TrainingConfig(str(tmp_path), train_batch_size=8, num_train_steps=1))
    assert vars(job) == before
    assert isinstance(plan, fine_tuning.RunPlan)
    assert plan.training_config.num_train_steps == plan.last_step == 9 * 4 // 8
    assert plan.training_config.num_warmup_steps == int(4 * 0.1)
    assert plan.predict_fallback == "init/model.ckpt-3"
    assert os.path.exists(plan.task_inputs["train_record_file"])
    assert plan.task_inputs["scorer"].is_labelled
