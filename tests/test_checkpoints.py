"""Name-based checkpoints: what TF itself reads back, atomicity, resolution, load reports."""

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.modeling import classifier, encoder, pretraining


def small_config(**fields):
    base = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=24, max_position_embeddings=16)
    base.update(fields)
    return AlbertConfig(**base)


def randomise(model, seed=0):
    rng = np.random.default_rng(seed)
    for variable in model.checkpoint_variables().values():
        variable.assign(rng.normal(0, 1, variable.shape).astype(np.float32))


def values(model):
    return {name: variable.numpy() for name, variable in model.checkpoint_variables().items()}


def test_written_checkpoint_is_read_by_tensorflow(tmp_path):
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(small_config()))
    randomise(model)
    tensors = dict(model.checkpoint_variables())
    tensors["global_step"] = 12
    tensors["bert/pooler/dense/kernel/adam_m"] = np.ones((16, 16), np.float32)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-12"), tensors)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    assert set(shapes) == set(tensors)
    for name, variable in model.checkpoint_variables().items():
        np.testing.assert_array_equal(reader.get_tensor(name), variable.numpy())
    assert reader.get_variable_to_dtype_map()["global_step"] == tf.int64
    assert reader.get_tensor("global_step") == 12
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-12.data-00000-of-00001",
                                            "model.ckpt-12.index"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path.endswith("model.ckpt-12")
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix == checkpoints.latest_checkpoint(str(tmp_path))


def test_state_file_lists_existing_checkpoints_newest_last(tmp_path):
    for step in (1, 2, 3):
        checkpoints.write_checkpoint(str(tmp_path / f"model.ckpt-{step}"), {"global_step": step})
    checkpoints.remove_checkpoint(str(tmp_path / "model.ckpt-1"))
    checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-4"), {"global_step": 4})
    text = (tmp_path / "checkpoint").read_text()
    assert text.splitlines() == ['model_checkpoint_path: "model.ckpt-4"',
                                 'all_model_checkpoint_paths: "model.ckpt-2"',
                                 'all_model_checkpoint_paths: "model.ckpt-3"',
                                 'all_model_checkpoint_paths: "model.ckpt-4"']
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-2", "model.ckpt-3", "model.ckpt-4"]
    checkpoints.write_checkpoint_state(str(tmp_path), str(tmp_path / "model.ckpt-3"))
    assert checkpoints.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")


def test_interrupted_write_leaves_nothing_readable(tmp_path, monkeypatch):
    real_rename = tf.io.gfile.rename

    def failing_rename(source, target, overwrite=False):
        if target.endswith(".index"):
            raise OSError("disk full")
        return real_rename(source, target, overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", failing_rename)
    with pytest.raises(OSError, match="disk full"):
        checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-5"), {"global_step": 5})
    monkeypatch.undo()
    assert not (tmp_path / "model.ckpt-5.index").exists()
    assert not (tmp_path / "checkpoint").exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temp files left
    with pytest.raises(checkpoints.CheckpointNotFoundError):
        checkpoints.resolve_checkpoint(str(tmp_path / "model.ckpt-5"))


def test_round_trip_into_a_fresh_model(tmp_path):
    config = small_config()
    source = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    randomise(source)
    checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), source.checkpoint_variables())
    target = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    report = checkpoints.load_into(target.checkpoint_variables(), str(tmp_path))
    assert len(report.mapped) == 32 and not (report.missing or report.unused or report.mismatched)
    for name, value in values(source).items():
        np.testing.assert_array_equal(values(target)[name], value)
    assert "Loaded 32 variables" in str(report)


def test_release_tarball_directory_with_slots_and_step(tmp_path):
    """`albert_base/`: model.ckpt-best.* and no state file; slots and global_step are skipped."""
    config = small_config()
    source = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    randomise(source)
    tensors = dict(source.checkpoint_variables())
    for name, variable in source.checkpoint_variables().items():
        for slot in ("adam_m", "adam_v", "lamb_m", "lamb_v"):
            tensors[f"{name}/{slot}"] = np.zeros(variable.shape, np.float32)
    tensors["global_step"] = 3
    checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-best"), tensors, update_state=False)
    assert checkpoints.resolve_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-best")
    target = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=3)
    report = checkpoints.load_into(target.checkpoint_variables(), str(tmp_path))
    assert report.missing == ["output_weights", "output_bias"]
    assert sorted(report.unused) == sorted(n for n in source.checkpoint_variables() if n.startswith("cls/"))
    assert len(report.skipped) == 32 * 4 + 1
    np.testing.assert_array_equal(values(target)["bert/pooler/dense/kernel"],
                                  values(source)["bert/pooler/dense/kernel"])


def test_tf1_hub_module_layout(tmp_path):
    config = small_config()
    source = encoder.AlbertEncoder(config)
    randomise(source)
    module = tmp_path / "hub_module"
    checkpoints.write_checkpoint(
        str(module / "variables" / "variables"),
        {"module/" + name: variable for name, variable in source.checkpoint_variables().items()},
        update_state=False)
    target = encoder.AlbertEncoder(config)
    report = checkpoints.load_into(target.checkpoint_variables(), str(module))
    assert report.checkpoint_path == str(module / "variables" / "variables")
    assert report.mapped[0] == ("bert/embeddings/word_embeddings", "module/bert/embeddings/word_embeddings")
    assert not report.unused
    np.testing.assert_array_equal(values(target)["bert/embeddings/word_embeddings"],
                                  values(source)["bert/embeddings/word_embeddings"])


def test_missing_encoder_variable_is_an_error_naming_it(tmp_path):
    config = small_config()
    tensors = dict(encoder.AlbertEncoder(config).checkpoint_variables())
    del tensors["bert/embeddings/LayerNorm/beta"]
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), tensors)
    with pytest.raises(checkpoints.CheckpointError,
                       match=f"{prefix}: encoder variable bert/embeddings/LayerNorm/beta is not in "
                             "the checkpoint"):
        checkpoints.load_into(encoder.AlbertEncoder(config).checkpoint_variables(), prefix)


def test_a_checkpoint_without_a_pooler_loads_with_the_pooler_a_new_head(tmp_path, caplog):
    """transformers' AlbertForMaskedLM, AlbertForTokenClassification and
    AlbertForQuestionAnswering have no pooler: their imported checkpoints warm-start every model,
    the pooler left initialised and named at INFO as a new head."""
    caplog.set_level(logging.INFO, logger="absl")
    config = small_config()
    source = encoder.AlbertEncoder(config)
    tensors = {name: value for name, value in source.checkpoint_variables().items()
               if not name.startswith("bert/pooler/")}
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), tensors)
    target = encoder.AlbertEncoder(config)
    before = values(target)
    report = checkpoints.load_into(target.checkpoint_variables(), prefix)
    assert report.missing == ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
    after = values(target)
    np.testing.assert_array_equal(after["bert/pooler/dense/kernel"], before["bert/pooler/dense/kernel"])
    np.testing.assert_array_equal(after["bert/embeddings/word_embeddings"],
                                  values(source)["bert/embeddings/word_embeddings"])
    assert (f"Checkpoint {prefix} has no bert/pooler/dense/kernel, bert/pooler/dense/bias: new "
            "head variables, left initialised") in caplog.text


def test_shape_mismatch_names_the_variable(tmp_path):
    written = encoder.AlbertEncoder(small_config(intermediate_size=30))
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), written.checkpoint_variables())
    target = encoder.AlbertEncoder(small_config())
    before = values(target)
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.load_into(target.checkpoint_variables(), prefix)
    message = str(error.value)
    assert "ffn_1/intermediate/dense/kernel" in message and "[16, 24]" in message and "[16, 30]" in message
    assert prefix in message
    for name, value in values(target).items():  # nothing assigned on error
        np.testing.assert_array_equal(value, before[name])


def test_mismatched_head_is_refused_or_if_new_reported_and_left_initialised(tmp_path):
    config = small_config()
    source = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=2)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), source.checkpoint_variables())
    target = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=3)
    initial = values(target)["output_weights"]
    with pytest.raises(checkpoints.CheckpointError, match=r"head variable output_weights: the "
                                                          r"model has \[3, 16\], the checkpoint"):
        checkpoints.load_into(target.checkpoint_variables(), prefix)  # unless told it is new:
    report = checkpoints.load_into(target.checkpoint_variables(), prefix, new_heads=True)
    assert report.mismatched == [("output_weights", (3, 16), (2, 16)), ("output_bias", (3,), (2,))]
    np.testing.assert_array_equal(values(target)["output_weights"], initial)
    assert "mismatch output_weights: model [3, 16] vs checkpoint [2, 16]" in str(report)


def test_a_new_head_is_reported_at_info_with_its_names(tmp_path, caplog):
    """Fine-tuning from one's own pretraining: the classifier head is not in the checkpoint,
    the expected case, so it is an INFO line naming the variables, never a WARNING; a head of
    another shape (allowed with new_heads) stays a WARNING."""
    config = small_config()
    pretrained = encoder.AlbertEncoder(config)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"),
                                          pretrained.checkpoint_variables())
    target = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=2)
    with caplog.at_level(logging.INFO, logger="absl"):
        report = checkpoints.load_into(target.checkpoint_variables(), prefix)
    assert sorted(report.missing) == ["output_bias", "output_weights"]
    head = [record for record in caplog.records if "new head" in record.getMessage()]
    assert [record.levelno for record in head] == [logging.INFO]
    assert "output_weights" in head[0].getMessage() and "output_bias" in head[0].getMessage()
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    source = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=3)
    other = checkpoints.write_checkpoint(str(tmp_path / "other" / "model.ckpt-1"),
                                         source.checkpoint_variables())
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="absl"):
        checkpoints.load_into(target.checkpoint_variables(), other, new_heads=True)
    (warning,) = [record.getMessage() for record in caplog.records
                  if record.levelno == logging.WARNING]
    assert "output_weights (model [2, 16], checkpoint [3, 16])" in warning


def test_init_from_group0(tmp_path):
    """--init_from_group0: a G = 1 checkpoint grows into G = 2; group_1 starts as a copy of group_0."""
    shared = encoder.AlbertEncoder(small_config(num_hidden_layers=4))
    randomise(shared)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), shared.checkpoint_variables())
    grown = encoder.AlbertEncoder(small_config(num_hidden_layers=4, num_hidden_groups=2))
    with pytest.raises(checkpoints.CheckpointError, match="group_1"):
        checkpoints.load_into(grown.checkpoint_variables(), prefix)
    report = checkpoints.load_into(grown.checkpoint_variables(), prefix, init_from_group0=True)
    assert not report.missing
    assert ("bert/encoder/transformer/group_1/inner_group_0/attention_1/self/query/kernel",
            "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel") in report.mapped
    for name, value in values(grown).items():
        np.testing.assert_array_equal(value, values(shared)[name.replace("group_1", "group_0")])
    inputs = {"input_ids": np.array([[1, 2, 3, 4]], np.int32)}
    np.testing.assert_allclose(grown(inputs)["sequence_output"], shared(inputs)["sequence_output"], atol=1e-5)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(checkpoints.CheckpointNotFoundError, match="no checkpoint found.*nope.index"):
        checkpoints.load_into({}, str(tmp_path / "nope"))
    with pytest.raises(checkpoints.CheckpointNotFoundError, match="no checkpoint in this directory"):
        checkpoints.resolve_checkpoint(str(tmp_path))
    with pytest.raises(checkpoints.CheckpointNotFoundError, match="no checkpoint path given"):
        checkpoints.resolve_checkpoint("")
    checkpoints.write_checkpoint(str(tmp_path / "a"), {"x": 1.0}, update_state=False)
    checkpoints.write_checkpoint(str(tmp_path / "b"), {"x": 2.0}, update_state=False)
    with pytest.raises(checkpoints.CheckpointNotFoundError, match=r"several checkpoints.*\['a', 'b'\]"):
        checkpoints.resolve_checkpoint(str(tmp_path))


def test_read_tensors_copy_and_prefix_forms(tmp_path):
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-7"),
                                          {"w": np.arange(3, dtype=np.float32), "w/adam_v": np.ones(3, np.float32),
                                           "global_step": 7})
    read = checkpoints.read_tensors(prefix, ["w/adam_v", "global_step"])
    assert list(read) == ["w/adam_v", "global_step"] and read["global_step"] == 7
    assert checkpoints.list_variables(prefix + ".index") == {"global_step": (), "w": (3,), "w/adam_v": (3,)}
    with pytest.raises(checkpoints.CheckpointError, match=r"no tensor named \['w/lamb_m'\]"):
        checkpoints.read_tensors(prefix, ["w/lamb_m"])
    best = checkpoints.copy_checkpoint(str(tmp_path), str(tmp_path / "model.ckpt-best"))
    np.testing.assert_array_equal(checkpoints.read_tensors(best)["w"], [0, 1, 2])
    assert checkpoints.latest_checkpoint(str(tmp_path)) == prefix  # the copy does not become "latest"


def test_init_from_group0_keeps_groups_the_checkpoint_has(tmp_path):
    """--init_from_group0 on a G = 2 checkpoint: group_1 comes from the checkpoint's group_1, not
    from group_0 (the original prefers the exact name)."""
    two_groups = small_config(num_hidden_layers=4, num_hidden_groups=2)
    trained = encoder.AlbertEncoder(two_groups)
    randomise(trained)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"),
                                          trained.checkpoint_variables())
    loaded = encoder.AlbertEncoder(two_groups)
    report = checkpoints.load_into(loaded.checkpoint_variables(), prefix, init_from_group0=True)
    assert not report.missing
    name = "bert/encoder/transformer/group_1/inner_group_0/attention_1/self/query/kernel"
    assert (name, name) in report.mapped
    trained_values = values(trained)
    assert not np.array_equal(trained_values[name], trained_values[name.replace("group_1", "group_0")])
    for key, value in values(loaded).items():
        np.testing.assert_array_equal(value, trained_values[key])


def test_load_logs_one_line_and_the_variable_list_only_at_verbosity_1(tmp_path, caplog):
    """A checkpoint load used to log 30+ "mapped ..." lines at every start; the list is a
    detail for `-v 1`."""
    from absl import logging as absl_logging
    source = {"bert/embeddings/word_embeddings": tf.Variable(tf.ones([3, 2]))}
    checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), source)
    target = {"bert/embeddings/word_embeddings": tf.Variable(tf.zeros([3, 2]))}
    for verbosity, expected_lines in ((absl_logging.INFO, 1), (absl_logging.DEBUG, 2)):
        absl_logging.set_verbosity(verbosity)  # conftest restores the level after the test
        caplog.clear()
        with caplog.at_level(1, logger="absl"):
            checkpoints.load_into(target, str(tmp_path))
        (message,) = [r.getMessage() for r in caplog.records if "Loaded 1 variables" in r.getMessage()]
        assert len(message.splitlines()) == expected_lines, message
