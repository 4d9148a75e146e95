"""run_glue.sh: the original per-task hyperparameters (the original README's table) and its argument checks."""

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "run_glue.sh")

# The original README's table (task, warmup, lr, steps, save, batch); WNLI from the paper's Table 14.
ORIGINAL = {
    "sst-2": ("1256", "1e-5", "20935", "100", "32"),
    "mnli": ("1000", "3e-5", "10000", "100", "128"),
    "cola": ("320", "1e-5", "5336", "100", "16"),
    "qnli": ("1986", "1e-5", "33112", "200", "32"),
    "qqp": ("1000", "5e-5", "14000", "100", "128"),
    "rte": ("200", "3e-5", "800", "100", "32"),
    "sts-b": ("214", "2e-5", "3598", "100", "16"),
    "mrpc": ("200", "2e-5", "800", "100", "32"),
    "wnli": ("250", "2e-5", "2000", "100", "16"),
}


def _model_dir(tmp_path):
    model = tmp_path / "albert_base"
    model.mkdir()
    (model / "albert_config.json").write_text("{}")
    (model / "30k-clean.model").write_text("")
    return model


def _flags(line):
    return dict(re.findall(r"--([a-z_]+)=(\S+)", line))


def test_every_task_gets_the_original_hyperparameters(tmp_path):
    model = _model_dir(tmp_path)
    env = dict(os.environ, DRY_RUN="1", PYTHON="python3")
    result = subprocess.run([SCRIPT, str(tmp_path), str(model), str(tmp_path / "out")], env=env,
                            capture_output=True, text=True, check=True)
    training = [_flags(line) for line in result.stdout.splitlines() if "--do_train" in line]
    assert sorted(f["task_name"] for f in training) == sorted(ORIGINAL)
    for flags in training:
        assert (flags["warmup_step"], flags["learning_rate"], flags["train_step"],
                flags["save_checkpoints_steps"], flags["train_batch_size"]) == ORIGINAL[flags["task_name"]]
        assert flags["max_seq_length"] == "512" and flags["optimizer"] == "adamw"
        assert flags["init_checkpoint"] == str(model)
        assert flags["albert_config_file"] == str(model / "albert_config.json")
        assert flags["spm_model_file"] == str(model / "30k-clean.model")
    predict_only = [_flags(line) for line in result.stdout.splitlines()
                    if "--do_predict" in line and "--do_train" not in line]
    assert sorted(f["task_name"] for f in predict_only) == ["ax", "mismnli"]


def test_missing_or_wrong_paths_are_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("GLUE_DIR", "ALBERT_DIR", "OUTPUT_DIR")}
    result = subprocess.run([SCRIPT], env=env, capture_output=True, text=True)
    assert result.returncode == 2 and "usage:" in result.stderr
    result = subprocess.run([SCRIPT, str(tmp_path / "nowhere"), str(tmp_path), str(tmp_path)],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 2 and "nowhere: no such directory" in result.stderr
    result = subprocess.run([SCRIPT, str(tmp_path), str(tmp_path), str(tmp_path)], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 2 and "albert_config.json: no such file" in result.stderr
    model = _model_dir(tmp_path)
    result = subprocess.run([SCRIPT], env=dict(env, GLUE_DIR=str(tmp_path), ALBERT_DIR=str(model),
                                               OUTPUT_DIR=str(tmp_path / "o"), DRY_RUN="1",
                                               TASKS="RTE BOGUS"),
                            capture_output=True, text=True)
    assert result.returncode == 2 and "unknown task 'BOGUS'" in result.stderr
    assert "--task_name=rte" in result.stdout
