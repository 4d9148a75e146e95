"""The one fine-tuning flow: the shared flags and `train_evaluate_predict`, in-process."""

from absl import app, flags
import pytest

from albert_tf import errors
from albert_tf.config import AlbertConfig
from albert_tf.scripts import run_classifier, run_race, run_tagging
from albert_tf.training import evaluation, fine_tuning
from albert_tf.training import flags as training_flags

SCRIPTS = (run_classifier, run_race, run_tagging)
SHARED = ("data_dir", "albert_config_file", "spm_model_file", "vocab_file", "do_lower_case",
          "max_seq_length", "init_checkpoint", "albert_hub_module_handle", "allow_random_init",
          "do_train", "do_eval", "do_predict", "train_step", "warmup_step", "train_batch_size",
          "eval_batch_size", "predict_batch_size", "learning_rate", "optimizer", "seed",
          "length_buckets", "eval_timeout_secs", "distribution_strategy", "precision",
          "gradient_accumulation_steps", "keep_checkpoint_max", "output_dir")


def _flag_values(script, *args):
    flag_values = flags.FlagValues()
    script.define_flags(flag_values)
    flag_values([script.__name__, *args])
    return flag_values


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.__name__.rsplit(".", 1)[-1])
def test_every_script_defines_the_shared_flags_on_its_own_flag_values(script):
    first = flags.FlagValues()
    script.define_flags(first)
    second = flags.FlagValues()
    script.define_flags(second)  # no duplicate-flag error: nothing is defined globally
    for name in SHARED:
        assert name in first and name in second, f"{script.__name__} lacks --{name}"


def test_each_script_keeps_its_original_defaults():
    common = ["--data_dir=d", "--albert_config_file=c.json", "--output_dir=o"]
    classifier = _flag_values(run_classifier, *common, "--task_name=cola")
    race = _flag_values(run_race, *common)
    tagging = _flag_values(run_tagging, *common)
    assert (classifier.max_seq_length, classifier.train_step, classifier.do_train) == (512, 1000,
                                                                                       False)
    assert (race.max_seq_length, race.train_step, race.warmup_step) == (512, 12000, 1000)
    assert (race.do_train, race.do_eval, race.learning_rate) == (True, True, 1e-5)
    assert race["num_keep_checkpoint"].value == race.keep_checkpoint_max
    assert (tagging.max_seq_length, tagging.predict_batch_size) == (128, 32)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.__name__.rsplit(".", 1)[-1])
def test_nothing_to_do_is_a_usage_error_in_process(script):
    flag_values = _flag_values(script, "--data_dir=d", "--albert_config_file=c.json",
                               "--output_dir=o", "--task_name=cola" if script is run_classifier
                               else "--seed=1", "--nodo_train", "--nodo_eval")
    with pytest.raises(app.UsageError, match="At least one of --do_train"):
        script.run(flag_values)


class _FakeTask:
    eval_metric_name = "eval_accuracy"


class _FakeTrainer:
    task = _FakeTask()


class _RecordingJob(fine_tuning.FineTuningJob):
    """A job that records what the flow asks of it, in order."""

    def __init__(self, output_dir):
        self.output_dir = output_dir
        self.albert_config = AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16,
                                          num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=32)
        self.calls = []

    def plan(self, options, training_config):
        self.calls.append(("plan", training_config.num_train_steps, options.do_train,
                           options.do_eval, options.do_predict))
        return fine_tuning.RunPlan(training_config, {"records": "r"}, last_step=9)

    def build_task(self, task_inputs):
        raise AssertionError("build_trainer is replaced")

    def build_trainer(self, strategy, plan):
        self.calls.append(("build_trainer", plan.task_inputs))
        return _FakeTrainer()

    def evaluate(self, trainer, checkpoint_path, batch_size):
        self.calls.append(("evaluate", checkpoint_path, batch_size))
        return {"eval_accuracy": 0.5}

    def best_checkpoint(self, fallback=None):
        return "model.ckpt-best"

    def predict(self, trainer, checkpoint_path, batch_size):
        self.calls.append(("predict", checkpoint_path, batch_size))
        return ["predictions.tsv"], {"accuracy": 1.0}


def test_train_evaluate_predict_runs_the_steps_in_order(tmp_path, monkeypatch):
    output_dir = tmp_path / "out"
    flag_values = _flag_values(run_tagging, "--data_dir=d", "--albert_config_file=c.json",
                               f"--output_dir={output_dir}", "--do_train", "--do_eval",
                               "--do_predict", "--allow_random_init", "--train_step=9",
                               "--eval_batch_size=3", "--predict_batch_size=5")
    job = _RecordingJob(str(output_dir))

    def train_and_evaluate(trainer, evaluate_fn, do_train, do_eval, last_step, *args):
        job.calls.append(("train_and_evaluate", do_train, do_eval, last_step))
        evaluate_fn("model.ckpt-7")
        return {"best_step": 7, "best_value": 0.5, "last_evaluated": 7}

    monkeypatch.setattr(evaluation, "train_and_evaluate", train_and_evaluate)
    outcome = fine_tuning.train_evaluate_predict(
        job, *training_flags.flow_from_flags(flag_values), strategy=None)
    assert isinstance(outcome.trainer, _FakeTrainer) and outcome.summary["best_step"] == 7
    assert outcome.test_results == {"accuracy": 1.0}  # predict's results come back as a value
    assert job.calls == [("plan", 9, True, True, True), ("build_trainer", {"records": "r"}),
                         ("train_and_evaluate", True, True, 9), ("evaluate", "model.ckpt-7", 3),
                         ("predict", "model.ckpt-best", 5)]
    # The effective config is written beside the checkpoints before training.
    assert AlbertConfig.from_json_file(str(output_dir / "albert_config.json")).hidden_size == 16


def test_training_from_nothing_is_refused_before_anything_is_built(tmp_path):
    flag_values = _flag_values(run_tagging, "--data_dir=d", "--albert_config_file=c.json",
                               f"--output_dir={tmp_path}", "--do_train")
    job = _RecordingJob(str(tmp_path))
    with pytest.raises(errors.UserInputError, match="--allow_random_init"):
        fine_tuning.train_evaluate_predict(
            job, *training_flags.flow_from_flags(flag_values), strategy=None)
    assert job.calls == []


def test_run_squad_shares_the_fine_tuning_flags_with_its_original_names(tmp_path):
    """run_squad.py defines the shared flags from the same place (so it has --seed and a local
    --albert_hub_module_handle, as the others), without the flags its original lacks."""
    from albert_tf.scripts import run_squad
    flag_values = flags.FlagValues()
    run_squad.define_flags(flag_values)
    shared = set(SHARED) - {"data_dir", "do_eval", "train_step", "warmup_step", "eval_batch_size"}
    assert all(name in flag_values for name in shared)
    assert not any(name in flag_values for name in ("data_dir", "do_eval", "train_step"))
    flag_values(["run_squad.py", "--albert_config_file=c.json", "--spm_model_file=s.model",
                 "--output_dir=o", f"--albert_hub_module_handle={tmp_path}", "--seed=3"])
    assert training_flags.init_checkpoint_from_flags(flag_values) == str(tmp_path)
    assert (flag_values.seed, flag_values.max_seq_length, flag_values.predict_batch_size) == (
        3, 384, 8)


def test_the_scripts_share_one_preamble(tmp_path):
    """run_classifier, run_race, run_tagging and run_squad start through
    `training_flags.start_fine_tuning`: nothing to do is refused naming the script's own
    actions, --seed seeds Keras (the same numbers as keras.utils.set_random_seed), and the config
    file is read and the strategy and batching resolved there, not in each script."""
    import inspect

    import keras
    from albert_tf.scripts import run_squad
    for script in (*SCRIPTS, run_squad):
        source = inspect.getsource(script.run)
        assert "start_fine_tuning(" in source, script.__name__
        for repeated in ("set_random_seed", "from_json_file", "strategy_from_flags",
                         "batching_from_flags"):
            assert repeated not in source, f"{script.__name__} repeats {repeated}"
    config = tmp_path / "albert_config.json"
    AlbertConfig(vocab_size=99, hidden_size=32, num_attention_heads=4).to_json_file(str(config))
    flag_values = _flag_values(run_tagging, "--data_dir=d", f"--albert_config_file={config}",
                               "--output_dir=o", "--seed=7", "--nodo_train", "--nodo_eval")
    with pytest.raises(app.UsageError, match=r"At least one of --do_train, --do_eval or "
                                             r"--do_predict must be given"):
        training_flags.start_fine_tuning(flag_values, ("do_train", "do_eval", "do_predict"))
    flag_values.do_predict = True
    start = training_flags.start_fine_tuning(flag_values, ("do_train", "do_eval", "do_predict"))
    seeded = keras.random.uniform([3]).numpy().tolist()
    keras.utils.set_random_seed(7)
    assert keras.random.uniform([3]).numpy().tolist() == seeded
    assert start.albert_config.hidden_size == 32 and start.strategy.num_replicas_in_sync == 1
    assert start.batching == training_flags.batching_from_flags(flag_values, start.strategy)


def test_glue_race_and_tagging_datasets_come_from_one_recipe():
    """The three tasks build their training, evaluation and test datasets in
    `task.RecordFilesTask`; each only parses its records (RACE its own padded whole-set
    batches)."""
    from albert_tf.glue import task as glue_task
    from albert_tf.race import task as race_task
    from albert_tf.tagging import task as tagging_task
    from albert_tf.training import task as task_lib
    shared = ("train_dataset", "eval_dataset", "predict_dataset", "dataset_of", "records")
    for task_class in (glue_task.ClassifierTask, race_task.RaceTask, tagging_task.TaggingTask):
        assert issubclass(task_class, task_lib.RecordFilesTask)
        assert not set(shared) & set(vars(task_class)), task_class.__name__
    task = tagging_task.TaggingTask(None, ["O", "B-X"], 16, train_file="t.tfrecord")
    with pytest.raises(ValueError, match="TaggingTask has no eval_file"):
        task.eval_dataset(None, 4)
