"""Long work logs its progress: count, rate and ETA at a steady interval, and a last line."""

import logging

from absl import logging as absl_logging
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import progress
from albert_tf.text import tokenization
from albert_tf.glue import features as glue_features
from albert_tf.glue.processors import InputExample
from albert_tf.squad import features as squad_features
from albert_tf.squad import reader
from albert_tf.training import prediction
from albert_tf.training import task as task_lib


class _Messages(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def caplog():
    """The absl logger's INFO lines, whatever verbosity or handlers earlier tests left."""
    logger = absl_logging.get_absl_logger()
    handler, level = _Messages(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_lines_give_count_rate_and_eta_at_the_interval(caplog):
    clock = _Clock()
    log = progress.ProgressLog("Converting", total=1000, unit="examples", interval_seconds=10,
                               clock=clock)
    clock.now += 4
    log.advance(100)  # before the interval: quiet
    assert caplog.messages == []
    clock.now += 6
    log.advance(150)  # 250 in 10 s: 25/s, 750 left: 30 s
    assert caplog.messages == ["Converting: 250/1,000 examples (25%), 25.0 examples/s, "
                               "ETA 0:00:30"]
    clock.now += 5
    log.advance(250)
    assert len(caplog.messages) == 1  # 5 s since the last line
    log.finish()
    assert caplog.messages[-1] == "Converting: done, 500 examples in 0:00:15 (33.3 examples/s)"


def test_without_a_total_lines_give_count_and_rate():
    clock = _Clock()
    log = progress.ProgressLog("Reading", unit="lines", clock=clock)
    clock.now += 2
    log.advance(7)
    assert log.line() == "Reading: 7 lines, 3.5 lines/s"


def test_glue_conversion_logs_its_progress(tmp_path, spm_model_file, caplog):
    tokenizer = tokenization.FullTokenizer(None, True, spm_model_file)
    examples = [InputExample(f"train-{i}", "a fine film", None, "1") for i in range(7)]
    path = str(tmp_path / "train.tf_record")
    glue_features.write_records(examples, ["0", "1"], 16, tokenizer, path, "sst-2")
    assert any(m.startswith("Converting sst-2 examples to train.tf_record: done, 7 examples in ")
               for m in caplog.messages), caplog.messages


def test_squad_conversion_logs_its_progress(tmp_path, spm_model_file, caplog):
    squad_file = tmp_path / "squad.json"
    squad_file.write_text('{"data": [{"title": "t", "paragraphs": [{"context": "The library '
                          'opened in 1901.", "qas": [{"id": "q1", "question": "When did it '
                          'open?", "answers": [{"text": "1901", "answer_start": 23}]}]}]}]}')
    examples, _ = reader.read_squad_examples(str(squad_file), is_training=False)
    tokenizer = tokenization.FullTokenizer(None, True, spm_model_file)
    squad_features.convert_examples_to_features(examples, tokenizer, 64, 32, 16, False, True)
    assert any(m.startswith("SQuAD: converting questions to features: done, 1 questions in ")
               for m in caplog.messages), caplog.messages


class _Doubling(task_lib.Task):
    """A task whose model doubles its input: what the whole-set pass hands to aggregate_logs."""

    def build_model(self, strategy):
        raise NotImplementedError

    def train_dataset(self, input_context, batch_size):
        raise NotImplementedError

    def call_model(self, model, features, training):
        return {"double": features["ids"] * 2}

    def eval_step_outputs(self, features, outputs):
        return outputs

    def aggregate_logs(self, state, step_outputs):
        return (state or []) + [step_outputs["double"]]


def test_the_whole_set_pass_logs_batches_and_keeps_the_order(caplog):
    dataset = tf.data.Dataset.range(10).batch(4).map(lambda ids: {"ids": ids})
    state = prediction.aggregate(_Doubling(), None, dataset, what="Scoring dev")
    assert [len(batch) for batch in state] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(state), np.arange(10) * 2)
    assert any(m.startswith("Scoring dev: done, 3 batches in ") for m in caplog.messages)


def test_heartbeat_logs_step_and_eta_while_a_long_loop_is_silent(caplog):
    """A 1000-step loop inside one call logs nothing until it ends; the heartbeat fills the
    silence with the step read meanwhile, and stays quiet after a line of the caller's."""
    import time
    steps = {"done": 10}
    with progress.Heartbeat("Training", lambda: steps["done"], total=110,
                            interval_seconds=0.2) as heartbeat:
        for _ in range(10):  # 1 s of "training" at 10 steps per 0.1 s
            time.sleep(0.1)
            steps["done"] += 10
        lines = list(caplog.messages)
        heartbeat.logged()
        caplog.messages.clear()
        time.sleep(0.1)  # less than an interval after the caller's own line
        assert caplog.messages == []
    assert len(lines) >= 3, lines
    first = lines[0].split()
    assert first[0] == "Training:" and first[2] == "steps,", lines[0]
    done, total = map(int, first[1].split("/"))
    assert 10 < done <= 110 and total == 110
    assert any("steps/s, ETA 0:00:0" in line for line in lines), lines  # the first may say "?"
    time.sleep(0.3)  # stopped: no line after the block
    assert caplog.messages == []


def test_heartbeat_eta_leaves_out_the_time_before_the_first_step(caplog):
    """A loop whose first step comes after 1 s of tracing, then 10 steps per 0.1 s: the
    heartbeat's rate is the steps' (about 100/s), not diluted by the tracing (about 9/s)."""
    import time
    steps = {"done": 0}
    with progress.Heartbeat("Training", lambda: steps["done"], total=1000,
                            interval_seconds=1.5):
        time.sleep(1.0)  # tracing: no step yet
        for _ in range(8):
            steps["done"] += 10
            time.sleep(0.1)
        lines = list(caplog.messages)
    assert lines, "no heartbeat"
    rate = float(lines[0].split(", ")[1].split()[0])
    assert rate > 70, lines[0]  # with the tracing counted: 60 steps / 1.5 s = 40
