"""Exact fine-tuning resume, and resume past a damaged checkpoint.

A fine-tuning run SIGKILLed at a random step and started again with the same command must end
with the final checkpoint of an uninterrupted run of that command, bit for bit: the resumed run
restores the input position and the dropout seed states saved beside each checkpoint
(`train_state/step-N`). Two seeded uninterrupted runs are bit-identical, so any difference is
the resume's. run_classifier.py (length buckets, gradient accumulation) and run_tagging.py
are killed for real in subprocesses; run_race.py and run_squad.py run in-process, where a run
killed between two checkpoints is reproduced by rewinding the uninterrupted run's directory to
an earlier checkpoint (what the kill leaves: the `checkpoint` file names it).

A latest checkpoint that does not read back whole (truncated by a full disk, cut short by a
copy) is skipped with a warning naming the file; with none left, one line naming it, exit 2.
"""

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints, cli
from albert_tf.config import AlbertConfig
from albert_tf.scripts import run_race, run_squad
from albert_tf.training import checkpointing, evaluation, loop
from tests import race_fixtures, training_toys
from tests.conftest import REPO_ROOT, script_env

STEPS, SAVE_EVERY = 40, 5
MODEL = dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, max_position_embeddings=64, hidden_dropout_prob=0.1,
             attention_probs_dropout_prob=0.1)  # dropout on: its seed states must be resumed
SCHEDULE = [f"--train_step={STEPS}", "--warmup_step=4", "--learning_rate=1e-3",
            f"--save_checkpoints_steps={SAVE_EVERY}", f"--iterations_per_loop={SAVE_EVERY}",
            "--max_seq_length=64", "--allow_random_init",
            "--do_train"]


def _config_file(directory, spm_model_file):
    vocab_size = sum(1 for _ in open(spm_model_file[:-len(".model")] + ".vocab",
                                     encoding="utf-8"))
    path = str(directory / "albert_config.json")
    AlbertConfig.from_dict(dict(MODEL, vocab_size=vocab_size)).to_json_file(path)
    return path


def _final_tensors(output_dir):
    latest = checkpoints.latest_checkpoint(str(output_dir))
    assert checkpointing.checkpoint_step(latest) == STEPS, latest
    return checkpoints.read_tensors(latest)


def _assert_same_bits(reference, output_dir):
    resumed = _final_tensors(output_dir)
    assert sorted(resumed) == sorted(reference)
    differ = [name for name in reference
              if reference[name].dtype != resumed[name].dtype
              or reference[name].tobytes() != resumed[name].tobytes()]
    assert not differ, f"{len(differ)} of {len(reference)} tensors differ, e.g. {differ[:3]}"


# ----------------------------------------------------------- killed for real (subprocesses)


def _glue_command(work, spm_model_file, output_dir):
    return ["run_classifier.py", "--task_name=SST-2", f"--data_dir={work / 'glue'}",
            f"--output_dir={output_dir}", f"--albert_config_file={work / 'albert_config.json'}",
            f"--spm_model_file={spm_model_file}", "--train_batch_size=8",
            "--gradient_accumulation_steps=2", "--seed=3", "--keep_checkpoint_max=3", *SCHEDULE]


def _tagging_command(work, spm_model_file, output_dir):
    return ["run_tagging.py", f"--data_dir={work / 'pos'}", f"--output_dir={output_dir}",
            f"--albert_config_file={work / 'albert_config.json'}",
            f"--spm_model_file={spm_model_file}", "--train_batch_size=8", "--seed=5",
            "--keep_checkpoint_max=3", *SCHEDULE]


def _write_glue(real_data, directory):
    """SST-2's layout with 240 movie-review sentences (labels: score > 0)."""
    directory.mkdir(parents=True)
    with open(real_data["movie_reviews"], encoding="utf-8") as reviews:
        rows = [line.rstrip("\n").split("\t") for line in reviews][:240]
    lines = ["sentence\tlabel"] + [f"{text}\t{int(float(score) > 0)}" for _, score, text in rows]
    (directory / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write_tagging(real_data, directory):
    """The first Brown part-of-speech sentences of each split."""
    directory.mkdir(parents=True)
    for split, count in {"train": 200, "dev": 20, "test": 20}.items():
        with open(real_data["brown_tagging"]["pos"][split], encoding="utf-8") as reader:
            blocks = reader.read().split("\n\n")[:count]
        (directory / f"{split}.txt").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def _start(command, log_path):
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, *command], cwd=REPO_ROOT, env=script_env(),
                                stdout=subprocess.DEVNULL, stderr=log)


def _kill_at_random_steps(killed_runs, rng, timeout=600):
    """SIGKILLs each run once `checkpoint` names a step >= its random `kill_at` (so mid-way
    through the next loop or while saving: wherever it is then); all watched at once."""
    for run in killed_runs:
        run["kill_at"] = rng.choice(range(SAVE_EVERY, STEPS - SAVE_EVERY, SAVE_EVERY))
    deadline = time.time() + timeout
    waiting = list(killed_runs)
    while waiting:
        for run in list(waiting):
            latest = checkpoints.latest_checkpoint(str(run["dir"]))
            if latest and checkpointing.checkpoint_step(latest) >= run["kill_at"]:
                run["process"].send_signal(signal.SIGKILL)
                waiting.remove(run)
            else:
                assert run["process"].poll() is None, \
                    f"ended (exit {run['process'].returncode}): {_log_tail(run['log'])}"
        assert time.time() < deadline, f"no checkpoint to kill at within {timeout} s"
        time.sleep(0.01)
    for run in killed_runs:
        assert run["process"].wait(timeout=60) == -signal.SIGKILL, "finished before the kill"
        run["latest_at_kill"] = checkpoints.latest_checkpoint(str(run["dir"]))
        assert checkpointing.checkpoint_step(run["latest_at_kill"]) < STEPS


def _log_tail(path):
    return open(path, encoding="utf-8").read()[-3000:]


@pytest.fixture(scope="module")
def killed_runs(real_data, spm_model_file, tmp_path_factory):
    """GLUE and tagging: an uninterrupted run and a run SIGKILLed at a random step (all four
    at once), then the killed ones' commands again (while the uninterrupted ones finish)."""
    work = tmp_path_factory.mktemp("killed")
    _config_file(work, spm_model_file)
    _write_glue(real_data, work / "glue" / "SST-2")
    _write_tagging(real_data, work / "pos")
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    commands = {"glue": _glue_command, "tagging": _tagging_command}
    runs, processes = {}, []
    try:
        for name, command in commands.items():
            for kind in ("reference", "killed"):
                output_dir = work / f"{name}_{kind}"
                log = work / f"{name}_{kind}.log"
                process = _start(command(work, spm_model_file, output_dir), log)
                processes.append(process)
                runs[name, kind] = {"dir": output_dir, "log": log, "process": process}
        _kill_at_random_steps([runs[name, "killed"] for name in commands], rng)
        waits = [(runs[name, "reference"]["process"], runs[name, "reference"]["log"])
                 for name in commands]
        for name, command in commands.items():
            run = runs[name, "killed"]
            run["resume_log"] = work / f"{name}_resumed.log"
            process = _start(command(work, spm_model_file, run["dir"]), run["resume_log"])
            processes.append(process)
            waits.append((process, run["resume_log"]))
        for process, log in waits:
            assert process.wait(timeout=600) == 0, _log_tail(log)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    return {"runs": runs, "seed": seed}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["glue", "tagging"])
def test_a_run_killed_at_a_random_step_resumes_to_the_same_bits(killed_runs, name):
    runs = killed_runs["runs"]
    killed = runs[name, "killed"]
    log = killed["resume_log"].read_text(encoding="utf-8")
    step = checkpointing.checkpoint_step(killed["latest_at_kill"])
    assert f"Resumed from {killed['latest_at_kill']}: global_step {step}" in log, \
        (killed_runs["seed"], log[-3000:])
    assert f"Input position restored from {killed['dir']}/train_state/step-{step}" in log
    _assert_same_bits(_final_tensors(runs[name, "reference"]["dir"]), killed["dir"])


# ----------------------------------------------------------- in process: RACE and SQuAD


def _rewind(output_dir, step):
    """What a run killed between model.ckpt-<step> and the next checkpoint leaves: the later
    checkpoints and their training state gone, `checkpoint` naming model.ckpt-<step>."""
    kept = []
    for found, prefix in evaluation.list_checkpoints(output_dir):
        if found > step:
            checkpoints.remove_checkpoint(prefix)
            for path in tf.io.gfile.glob(os.path.join(output_dir, "train_state",
                                                      f"step-{found}.*")):
                tf.io.gfile.remove(path)
        else:
            kept.append(prefix)
    checkpoints.write_checkpoint_state(output_dir, kept[-1], kept)


def _run_in_process(script, argv):
    flag_values = flags.FlagValues()
    script.define_flags(flag_values)
    flag_values([script.__name__, *argv])
    return script.run(flag_values)


def _resumes_exactly(script, argv, output_dir, caplog):
    """Runs `argv` to the end, rewinds to a random checkpoint, runs it again: same bits."""
    _run_in_process(script, argv)
    reference = _final_tensors(output_dir)
    step = random.choice(range(2 * SAVE_EVERY, STEPS, SAVE_EVERY))
    _rewind(output_dir, step)
    with caplog.at_level(logging.INFO, logger="absl"):  # whatever verbosity an earlier test left
        _run_in_process(script, argv)
    assert f"Input position restored from {output_dir}/train_state/step-{step}" in caplog.text
    _assert_same_bits(reference, output_dir)


@pytest.mark.slow
def test_race_resumes_to_the_same_bits(spm_model_file, tmp_path, caplog):
    data_dir = str(tmp_path / "data")
    articles = race_fixtures.make_articles(4, seed=1)
    race_fixtures.write_per_article(data_dir, "train", articles)
    race_fixtures.write_all_txt(data_dir, "dev", articles)
    output_dir = str(tmp_path / "out")
    argv = [f"--data_dir={data_dir}", f"--output_dir={output_dir}",
            f"--albert_config_file={_config_file(tmp_path, spm_model_file)}",
            f"--spm_model_file={spm_model_file}", "--max_qa_length=16", "--train_batch_size=4",
            f"--train_file={tmp_path / 'cache' / 'train.tf_record'}", "--seed=7",
            "--keep_checkpoint_max=8", "--nodo_eval", *SCHEDULE]
    _resumes_exactly(run_race, argv, output_dir, caplog)


@pytest.mark.slow
def test_squad_resumes_to_the_same_bits(spm_model_file, tmp_path, caplog):
    from tests.test_run_squad import squad_json
    data = tmp_path / "v2.json"
    data.write_text(json.dumps(squad_json(True)))
    output_dir = str(tmp_path / "out")
    argv = [f"--albert_config_file={_config_file(tmp_path, spm_model_file)}",
            f"--spm_model_file={spm_model_file}", f"--output_dir={output_dir}",
            f"--train_file={data}", "--version_2_with_negative", "--do_train",
            "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16",
            "--train_batch_size=8", "--num_train_epochs=35.6", "--learning_rate=1e-3",
            "--allow_random_init",
            f"--save_checkpoints_steps={SAVE_EVERY}", f"--iterations_per_loop={SAVE_EVERY}",
            "--keep_checkpoint_max=8", "--seed=11"]
    _resumes_exactly(run_squad, argv, output_dir, caplog)


# ----------------------------------------------------------- damaged checkpoints (toy task)


def _toy_trainer(output_dir):
    config = training_toys._config(str(output_dir), num_train_steps=40, save_checkpoints_steps=20,
                                   iterations_per_loop=20, keep_checkpoint_max=3)
    return loop.Trainer(training_toys.ToyTask(), tf.distribute.get_strategy(), config)


def _truncate(path, keep=0.5):
    with open(path, "r+b") as file:
        file.truncate(int(os.path.getsize(path) * keep))


@pytest.mark.parametrize("damaged", ["model.ckpt-40.data-00000-of-00001", "model.ckpt-40.index",
                                     "train_state/step-40.data-00000-of-00001"])
def test_resume_falls_back_past_a_damaged_latest_checkpoint(tmp_path, caplog, damaged):
    _toy_trainer(tmp_path).train()
    reference = _final_tensors(tmp_path)
    _truncate(tmp_path / damaged)
    trainer = _toy_trainer(tmp_path)
    with caplog.at_level(logging.WARNING, logger="absl"):
        assert trainer.restore_or_initialize() == 20
    assert f"{tmp_path / damaged}: damaged checkpoint file" in caplog.text
    assert f"Resuming from {tmp_path / 'model.ckpt-20'} instead of the damaged" in caplog.text
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-20"))
    for name, variable in trainer.variables_by_name.items():
        np.testing.assert_array_equal(variable.numpy(), stored[name], err_msg=name)
    trainer.train()  # steps 21-40 again, from the input position saved at step 20
    _assert_same_bits(reference, tmp_path)


def test_no_good_checkpoint_left_is_one_line_naming_the_file_and_exit_2(tmp_path, capsys):
    _toy_trainer(tmp_path).train()
    _truncate(tmp_path / "model.ckpt-40.data-00000-of-00001")
    _truncate(tmp_path / "model.ckpt-20.index", keep=0.1)
    with pytest.raises(SystemExit) as exit_info:
        cli.run(lambda argv: _toy_trainer(tmp_path).train(), argv=["train"])
    assert exit_info.value.code == cli.EXIT_USER_ERROR
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert (f": error: {tmp_path / 'model.ckpt-40.data-00000-of-00001'}: damaged checkpoint "
            "file (Read less bytes than requested; no earlier checkpoint in") in lines[0]


def test_a_checkpoint_without_training_state_resumes_with_a_warning(tmp_path, caplog):
    """Checkpoints of an older version have no train_state/: resume past the batches done,
    and say that dropout will differ. (Also the input path of GPUs, TPU and multi-worker
    training, whose iterators cannot be saved.)"""
    _toy_trainer(tmp_path).train()
    reference = _final_tensors(tmp_path)
    checkpoints.write_checkpoint_state(str(tmp_path), "model.ckpt-20")
    shutil.rmtree(tmp_path / "train_state")
    trainer = _toy_trainer(tmp_path)
    with caplog.at_level(logging.INFO, logger="absl"):  # whatever verbosity an earlier test left
        trainer.train()
    assert (f"{tmp_path / 'model.ckpt-20'} has no training state "
            f"({tmp_path / 'train_state' / 'step-20'})") in caplog.text
    assert "Input position: skipped the batches of the 20 steps done" in caplog.text
    # The toy has no dropout and a seeded shuffle: skipping the batches done is exact.
    _assert_same_bits(reference, tmp_path)


@pytest.mark.slow
def test_mirrored_strategy_resumes_to_the_same_bits(tmp_path):
    """Two replicas on logical CPUs read one tf.data iterator, saved with each checkpoint: the
    resumed run restores it and ends on the same bits."""
    step = random.choice([10, 20, 30])
    done = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "tests", "resume_mirrored.py"), str(tmp_path),
         str(step)], env=script_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["replicas"] == 2 and result["checkpointable"]
    assert result["differ"] == [], (step, result)
    assert result["tensors"] == 13  # 4 variables, 8 slots, global_step
