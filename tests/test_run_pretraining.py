"""run_pretraining.py end to end on TFRecords made by create_pretraining_data from the Brown Corpus.

Learning (MLM loss, SOP accuracy), SIGKILL and resume, bfloat16 and XLA, gradient accumulation
with the weighted MLM loss, and Hugging Face reading the checkpoint.
"""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.huggingface import hf_interop
from albert_tf.config import AlbertConfig
from albert_tf.pretraining import create_data, input_pipeline, options, task as pretraining_task
from albert_tf.demo.curves import read_scalars
from albert_tf.training import loop
from tests.conftest import REPO_ROOT, run_python, script_env

pytestmark = pytest.mark.slow

SEQ, PREDICTIONS, VOCAB = 64, 10, 4000
# The run_pretraining.py run: the smallest model that learned SOP here within a few hundred
# steps (2-layer or 64-wide models stayed at the majority class for 600 steps).
CONFIG = dict(vocab_size=VOCAB, embedding_size=32, hidden_size=128, num_hidden_layers=4,
              num_hidden_groups=1, inner_group_num=1, num_attention_heads=4,
              intermediate_size=256, max_position_embeddings=SEQ, type_vocab_size=2,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
# In-process runs (precision, XLA, accumulation): smaller, with 2 layer groups.
SMALL = dict(CONFIG, hidden_size=64, num_hidden_layers=2, num_hidden_groups=2,
             intermediate_size=128)
TRAIN_STEPS = 600


@pytest.fixture(scope="module")
def records(real_data, spm_model_file, tmp_path_factory):
    """One Brown shard (~2,300 instances of 64 tokens) → train.tfrecord, plus the config."""
    directory = tmp_path_factory.mktemp("pretraining_records")
    data_options = options.DataOptions(spm_model_file=spm_model_file, max_seq_length=SEQ,
                                       max_predictions_per_seq=PREDICTIONS, dupe_factor=1)
    brown = sorted(real_data["brown"])[0]
    output = str(directory / "train.tfrecord")
    create_data.create_pretraining_data(brown, output, data_options, num_workers=1)
    config_file = directory / "albert_config.json"
    config_file.write_text(json.dumps(CONFIG))
    return {"train": output, "config": str(config_file), "spm": spm_model_file}


def _command(records, output_dir, *extra):
    return ["run_pretraining.py",
            f"--albert_config_file={records['config']}", f"--input_file={records['train']}",
            f"--output_dir={output_dir}", f"--max_seq_length={SEQ}",
            f"--max_predictions_per_seq={PREDICTIONS}", *extra]


def _eval_blocks(path):
    """eval_results.txt as a list of {key: value} blocks (one per evaluated checkpoint)."""
    blocks, current = [], {}
    for line in open(path, encoding="utf-8"):
        key, value = (part.strip() for part in line.split(" = "))
        current[key] = float(value)
        if key == "best_global_step":
            blocks.append(current)
            current = {}
    return blocks


def _majority_rate(path):
    labels = []
    for record in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(record.numpy())
        labels.append(example.features.feature["next_sentence_labels"].int64_list.value[0])
    rate = np.mean(labels)
    return max(rate, 1 - rate)


def _lr(step):
    return 0.01 * (1 - step / TRAIN_STEPS)


@pytest.fixture(scope="module")
def killed_and_resumed(records, tmp_path_factory):
    """run_pretraining.py --do_train --do_eval, SIGKILLed once model.ckpt-200 exists, then the
    same command again. Returns the output dir, a copy of it at the kill, and the second log."""
    output_dir = tmp_path_factory.mktemp("pretrained")
    command = _command(records, output_dir, "--train_batch_size=64", "--learning_rate=0.01",
                       f"--num_train_steps={TRAIN_STEPS}", "--num_warmup_steps=50",
                       "--iterations_per_loop=20", "--save_checkpoints_steps=100",
                       "--keep_checkpoint_max=3", "--do_eval", "--max_eval_steps=20",
                       "--eval_batch_size=64")
    process = subprocess.Popen([sys.executable, *command], cwd=REPO_ROOT, env=script_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 600
        # Killed once `checkpoint` names model.ckpt-200 (its files are written just before).
        while not (checkpoints.latest_checkpoint(str(output_dir)) or "").endswith("-200"):
            assert process.poll() is None, "run_pretraining.py ended before it was killed"
            assert time.time() < deadline, "no model.ckpt-200 within 600 s"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    at_kill = tmp_path_factory.mktemp("at_kill")
    shutil.copytree(output_dir, at_kill, dirs_exist_ok=True)
    log = run_python(command).stderr
    return {"dir": output_dir, "at_kill": at_kill, "log": log}


def test_sigkill_then_the_same_command_resumes_step_lr_and_slots(records, killed_and_resumed):
    at_kill = killed_and_resumed["at_kill"]
    assert not list(at_kill.glob(".*tmp*.index"))  # no half-written checkpoint
    latest = checkpoints.latest_checkpoint(str(at_kill))
    step = int(latest.rsplit("-", 1)[1])
    assert 200 <= step < TRAIN_STEPS and step % 100 == 0
    stored = checkpoints.read_tensors(latest)
    assert int(stored["global_step"]) == step

    # What the restarted command restores (same code path, in process): step, lr, slots.
    config = loop.TrainingConfig(output_dir=str(at_kill), train_batch_size=64,
                                 num_train_steps=TRAIN_STEPS, num_warmup_steps=50,
                                 learning_rate=0.01, optimizer="lamb",
                                 save_checkpoints_steps=100, keep_checkpoint_max=3,
                                 iterations_per_loop=20)
    task = pretraining_task.PretrainingTask(AlbertConfig(**CONFIG), records["train"], SEQ,
                                            PREDICTIONS)
    trainer = loop.Trainer(task, tf.distribute.get_strategy(), config)
    assert trainer.restore_or_initialize() == step
    assert trainer.learning_rate == pytest.approx(_lr(step), rel=1e-5)
    slots = trainer.optimizer.slot_variables()
    assert len(slots) == 2 * len(trainer.variables_by_name)
    for name, slot in slots.items():
        np.testing.assert_array_equal(slot.numpy(), stored[name], err_msg=name)
    for name, variable in trainer.variables_by_name.items():
        np.testing.assert_array_equal(variable.numpy(), stored[name], err_msg=name)

    log = killed_and_resumed["log"]
    resumed = re.search(r"Resumed from (\S+): global_step (\d+), learning rate ([\d.e-]+)", log)
    assert resumed and os.path.basename(resumed.group(1)) == os.path.basename(latest)
    assert int(resumed.group(2)) == step
    assert float(resumed.group(3)) == pytest.approx(_lr(step), rel=1e-5)
    first_progress = re.search(r"step (\d+)/600: loss = ([\d.]+)", log)
    assert int(first_progress.group(1)) == step + 20
    assert float(first_progress.group(2)) < math.log(VOCAB)  # trained weights, not a fresh start
    output_dir = killed_and_resumed["dir"]
    assert sorted(p.name for p in output_dir.glob("model.ckpt-*.index")) == [
        "model.ckpt-400.index", "model.ckpt-500.index", "model.ckpt-600.index",
        "model.ckpt-best.index"]


def test_mlm_loss_falls_and_sop_beats_the_majority_class(records, killed_and_resumed):
    output_dir = killed_and_resumed["dir"]
    blocks = _eval_blocks(output_dir / "eval_results.txt")
    assert len(blocks) == 1  # do_train + do_eval: the final checkpoint, as the original
    result = blocks[0]
    assert result["global_step"] == TRAIN_STEPS
    assert {"loss", "masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy",
            "sentence_order_loss"} <= set(result)
    # An untrained model predicts ~uniformly: masked-LM loss ln(V) = 8.29.
    assert result["masked_lm_loss"] < 0.75 * math.log(VOCAB)
    assert result["masked_lm_accuracy"] > 0.06
    assert result["sentence_order_accuracy"] > _majority_rate(records["train"]) + 0.05
    assert result["loss"] == pytest.approx(
        result["masked_lm_loss"] + result["sentence_order_loss"], rel=0.02)
    best = checkpoints.read_tensors(str(output_dir / "model.ckpt-best"))
    final = checkpoints.read_tensors(str(output_dir / f"model.ckpt-{TRAIN_STEPS}"))
    assert int(best["global_step"]) == TRAIN_STEPS
    np.testing.assert_array_equal(best["bert/embeddings/word_embeddings"],
                                  final["bert/embeddings/word_embeddings"])
    progress = re.findall(r"step (\d+)/600: loss = [\d.]+, masked_lm_accuracy = [\d.]+, "
                          r"masked_lm_loss = [\d.]+, sentence_order_accuracy = [\d.]+, "
                          r"sentence_order_loss = [\d.]+, learning_rate = [\d.e-]+, "
                          r"examples_per_second = [\d.]+, steps_per_second = [\d.]+, ETA",
                          killed_and_resumed["log"])
    assert progress[-1] == "600"
    assert (output_dir / "eval").is_dir() and list(output_dir.glob("events.out.tfevents.*"))


def test_tensorboard_reads_the_training_and_evaluation_curves(killed_and_resumed):
    output_dir = killed_and_resumed["dir"]
    train, evaluation = read_scalars(output_dir), read_scalars(output_dir / "eval")
    curves = {"loss", "masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy",
              "sentence_order_loss"}
    assert curves | {"learning_rate", "examples_per_second"} <= set(train)
    assert curves <= set(evaluation)  # the same tags: the two runs overlay in TensorBoard
    steps, losses = train["loss"]
    assert steps[-1] == TRAIN_STEPS and losses[-1] < losses[0]
    assert evaluation["masked_lm_accuracy"][0][-1] == TRAIN_STEPS


def test_checkpoint_loads_in_hugging_face_with_identical_outputs(records, killed_and_resumed):
    import torch
    import transformers
    config = AlbertConfig(**CONFIG)
    task = pretraining_task.PretrainingTask(config, records["train"], SEQ, PREDICTIONS)
    model = task.build_model(tf.distribute.get_strategy())
    prefix = str(killed_and_resumed["dir"] / f"model.ckpt-{TRAIN_STEPS}")
    checkpoints.load_into(model.checkpoint_variables(), prefix)
    batch = next(iter(input_pipeline.pretraining_dataset(
        records["train"], batch_size=8, max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
        is_training=False)))
    ours = task.call_model(model, batch, training=False)
    hf_model = transformers.AlbertForPreTraining(hf_interop.huggingface_config(
        config, vocab_size=VOCAB, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=SEQ, type_vocab_size=2))
    hf_interop.load_original_checkpoint(hf_model, prefix)
    hf_model.eval()
    with torch.no_grad():
        theirs = hf_model(
            input_ids=torch.tensor(batch["input_ids"].numpy(), dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"].numpy(), dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"].numpy(), dtype=torch.long))
    positions = batch["masked_lm_positions"].numpy().astype(np.int64)
    hf_mlm = np.take_along_axis(theirs.prediction_logits.numpy(), positions[:, :, None], axis=1)
    assert np.abs(ours["mlm_logits"].numpy() - hf_mlm).max() <= 1e-4
    assert np.abs(ours["sop_logits"].numpy() - theirs.sop_logits.numpy()).max() <= 1e-4
    assert np.abs(ours["mlm_logits"].numpy()).max() > 1.0  # trained weights, not zeros


class _SequentialTask(pretraining_task.PretrainingTask):
    """Training batches in file order, so two runs see the same examples."""

    def train_dataset(self, input_context, batch_size):
        return self.eval_dataset(input_context, batch_size)


@pytest.mark.parametrize("precision,enable_xla", [("mixed_bfloat16", False), ("float32", True),
                                                  ("mixed_float16", False)])
def test_precisions_and_xla_train(records, tmp_path, precision, enable_xla):
    config = loop.TrainingConfig(output_dir=str(tmp_path), train_batch_size=16,
                                 num_train_steps=30, num_warmup_steps=0, learning_rate=0.005,
                                 optimizer="lamb", save_checkpoints_steps=30,
                                 iterations_per_loop=15, precision=precision,
                                 enable_xla=enable_xla)
    task = _SequentialTask(AlbertConfig(**SMALL), records["train"], SEQ, PREDICTIONS)
    trainer = loop.Trainer(task, tf.distribute.get_strategy(), config)
    if precision != "float32":
        assert trainer.model.encoder.dtype_policy.compute_dtype == precision.split("_")[1]
    before = trainer.evaluate(batch_size=32, max_steps=4)
    scalars = trainer.train()
    after = trainer.evaluate(batch_size=32, max_steps=4)
    assert trainer.global_step == 30 and np.isfinite(scalars["loss"])
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 0.3
    stored = checkpoints.read_tensors(str(tmp_path / "model.ckpt-30"))
    assert stored["bert/embeddings/word_embeddings"].dtype == np.float32
    assert stored["bert/embeddings/word_embeddings/adam_m"].dtype == np.float32


def test_accumulation_with_the_weighted_mlm_loss_equals_one_big_batch(records, tmp_path):
    """k micro-batches of b with different Σ masked_lm_weights = one step of k·b."""
    initial = pretraining_task.PretrainingTask(AlbertConfig(**SMALL), records["train"], SEQ,
                                               PREDICTIONS).build_model(None)
    init_checkpoint = checkpoints.write_checkpoint(str(tmp_path / "init" / "model.ckpt-0"),
                                                   initial.checkpoint_variables())
    results = {}
    for k in (1, 4):
        config = loop.TrainingConfig(output_dir=str(tmp_path / f"k{k}"), train_batch_size=16,
                                     num_train_steps=2, num_warmup_steps=0, learning_rate=0.005,
                                     optimizer="lamb", save_checkpoints_steps=2,
                                     iterations_per_loop=2, gradient_accumulation_steps=k,
                                     init_checkpoint=init_checkpoint)
        task = _SequentialTask(AlbertConfig(**SMALL), records["train"], SEQ, PREDICTIONS)
        trainer = loop.Trainer(task, tf.distribute.get_strategy(), config)
        trainer.train()
        results[k] = checkpoints.read_tensors(str(tmp_path / f"k{k}" / "model.ckpt-2"))
    weights = next(iter(input_pipeline.pretraining_dataset(
        records["train"], batch_size=4, max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
        is_training=False)))["masked_lm_weights"].numpy().sum(axis=1)
    assert len(set(weights.tolist())) > 1  # micro-batches really differ in Σ weights
    for name, value in results[1].items():
        np.testing.assert_allclose(results[4][name], value, rtol=2e-4, atol=2e-6, err_msg=name)
    moved = results[1]["bert/pooler/dense/kernel"] - initial.checkpoint_variables()[
        "bert/pooler/dense/kernel"].numpy()
    assert np.abs(moved).max() > 5e-5  # 25x the tolerance: the two steps did move it


def test_masked_lm_budget_and_missing_files_are_clear_errors(records, tmp_path):
    done = run_python(_command(records, tmp_path, "--masked_lm_budget=0.15"), check=False,
                      timeout=300)
    assert done.returncode != 0
    assert "online masking, which the original release never implemented" in done.stderr
    done = run_python(_command(records, tmp_path, f"--eval_input_file={tmp_path}/none-*"),
                      check=False, timeout=300)
    assert done.returncode != 0 and "--eval_input_file" in done.stderr


@pytest.mark.slow
def test_seed_makes_two_runs_train_the_same_weights(records, tmp_path):
    """--seed fixes the initialisation, dropout and record order: two runs end on the same
    weights; another seed does not."""
    final = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        output_dir = tmp_path / name
        run_python(_command(records, output_dir, "--do_train", f"--seed={seed}",
                            "--train_batch_size=8", "--num_train_steps=6", "--num_warmup_steps=0",
                            "--save_checkpoints_steps=6", "--iterations_per_loop=3"))
        final[name] = checkpoints.read_tensors(str(output_dir / "model.ckpt-6"))
    name = "bert/embeddings/word_embeddings"
    np.testing.assert_array_equal(final["a"][name], final["b"][name])
    assert not np.array_equal(final["a"][name], final["c"][name])


def test_two_cpu_replicas_train_as_one_and_resume_exactly(records, tmp_path):
    """--cpu_replicas=2 (MirroredStrategy over 2 logical CPUs, half the global batch each) logs
    the losses and writes the weights of one replica at the same global batch; rewound to
    model.ckpt-2, as a run killed after it leaves it, the same command restores its input
    position (the replicas read one ordinary tf.data iterator, saved with checkpoints) and ends
    on the same bytes."""
    common = ("--do_train", "--seed=7", "--train_batch_size=8", "--num_train_steps=4",
              "--num_warmup_steps=0", "--learning_rate=0.005", "--save_checkpoints_steps=2",
              "--iterations_per_loop=1")
    runs = {}
    for replicas in (1, 2):
        output_dir = tmp_path / f"replicas{replicas}"
        log = run_python(_command(records, output_dir, *common,
                                  f"--cpu_replicas={replicas}")).stderr
        steps, losses = read_scalars(str(output_dir))["loss"]
        runs[replicas] = {"dir": output_dir, "log": log, "steps": steps, "losses": losses,
                          "final": checkpoints.read_tensors(str(output_dir / "model.ckpt-4"))}
    assert "mirrored over 2 logical CPUs" in runs[2]["log"]
    assert "2 replica(s) in sync" in runs[2]["log"]
    assert runs[1]["steps"] == runs[2]["steps"] == [1, 2, 3, 4]
    np.testing.assert_allclose(runs[2]["losses"], runs[1]["losses"], rtol=1e-5)
    for name, value in runs[1]["final"].items():
        np.testing.assert_allclose(runs[2]["final"][name], value, rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    moved = runs[2]["final"]["bert/pooler/dense/kernel"] - checkpoints.read_tensors(
        str(runs[2]["dir"] / "model.ckpt-2"))["bert/pooler/dense/kernel"]
    # Steps 3 and 4 moved it by over 10x the tolerance (weights ~0.02: 1e-4 x 0.02 + 1e-6).
    assert np.abs(moved).max() > 5e-5
    output_dir = runs[2]["dir"]
    checkpoints.write_checkpoint_state(str(output_dir), str(output_dir / "model.ckpt-2"))
    log = run_python(_command(records, output_dir, *common, "--cpu_replicas=2")).stderr
    assert re.search(r"Resumed from \S+model\.ckpt-2: global_step 2", log)
    assert re.search(r"Input position restored from \S+step-2", log)
    again = checkpoints.read_tensors(str(output_dir / "model.ckpt-4"))
    assert [name for name, value in runs[2]["final"].items()
            if value.tobytes() != again[name].tobytes()] == []
