"""--export_precision (run_classifier, run_race, run_squad): bfloat16 keeps the float32
signatures with its matrix products in bfloat16; int8 adds model.tflite; each answers close to
the float32 export."""

import os
import types

from ai_edge_litert import interpreter as litert
import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf import checkpoints
from albert_tf.export import classifier as classifier_export
from albert_tf.export import tflite
from albert_tf.modeling import classifier, encoder
from albert_tf.training import length_buckets
from tests.conftest import brown_config


# docs/serving.md: the bfloat16 export's probabilities are within this of the float32 export's.
BFLOAT16_TOLERANCE = 0.05


def _matmul_types(model_dir):
    """The element types of the MatMul / BatchMatMul ops in the SavedModel's functions."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(model_dir, "saved_model.pb"), "rb") as reader:
        saved_model.ParseFromString(reader.read())
    return {tf.dtypes.as_dtype(node.attr["T"].type).name
            for function in saved_model.meta_graphs[0].graph_def.library.function
            for node in function.node_def if node.op in ("MatMul", "BatchMatMulV2")}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    keras.utils.set_random_seed(0)  # random weights whose answers spread (asserted below)
    config = brown_config()
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 2)
    dummy = tf.zeros([1, 2], tf.int32)
    model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy})
    model.head.output_weights.assign(model.head.output_weights * 50.0)  # spread the answers
    root = tmp_path_factory.mktemp("precisions")
    prefix = str(root / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                          in model.checkpoint_variables().items()})
    job = types.SimpleNamespace(
        albert_config=config, num_labels=2, label_list=["0", "1"], max_seq_length=64,
        regression=False, spm_model_file=None, do_lower_case=True,
        batching=length_buckets.Batching.cut((32, 64)))
    return {precision: classifier_export.export_from_checkpoint(
        job, prefix, str(root / precision), export_precision=precision)
        for precision in classifier_export.EXPORT_PRECISIONS}


def _probabilities(model_dir, ids, mask):
    ids_signature = tf.saved_model.load(model_dir).signatures["ids"]
    return ids_signature(input_ids=ids, input_mask=mask,
                         segment_ids=tf.zeros_like(ids))["probabilities"].numpy()


def test_bfloat16_export_has_float32_signatures_and_bfloat16_products(exports):
    float_ids = tf.saved_model.load(exports["float32"]).signatures["ids"]
    bf16_ids = tf.saved_model.load(exports["bfloat16"]).signatures["ids"]
    assert bf16_ids.structured_input_signature == float_ids.structured_input_signature
    assert ({key: spec.dtype for key, spec in bf16_ids.structured_outputs.items()}
            == {key: spec.dtype for key, spec in float_ids.structured_outputs.items()})
    assert "bfloat16" in _matmul_types(exports["bfloat16"])
    assert "bfloat16" not in _matmul_types(exports["float32"])
    # The products' weights are stored in bfloat16 (no cast per call); LayerNorm and the
    # embedding tables stay float32.
    stored = {variable.name: variable.dtype.name
              for variable in tf.saved_model.load(exports["bfloat16"]).variables}
    kernels = {name: dtype for name, dtype in stored.items() if "kernel" in name}
    assert kernels and set(kernels.values()) == {"bfloat16"}, stored
    assert {dtype for name, dtype in stored.items()
            if "gamma" in name or "beta" in name or "embeddings" in name} == {"float32"}, stored
    ids = tf.constant(np.random.RandomState(0).randint(5, 4000, (8, 30)), tf.int32)
    mask = tf.ones_like(ids)
    reference = _probabilities(exports["float32"], ids, mask)
    assert np.ptp(reference[:, 0]) > 0.1, np.ptp(reference[:, 0])
    bfloat16 = _probabilities(exports["bfloat16"], ids, mask)
    np.testing.assert_allclose(bfloat16, reference, atol=BFLOAT16_TOLERANCE)
    # Labels: the same wherever float32's answer is farther from a tie than the tolerance.
    decided = np.abs(reference[:, 0] - 0.5) > BFLOAT16_TOLERANCE
    assert decided.sum() >= 6, reference
    np.testing.assert_array_equal(bfloat16[decided].argmax(axis=1), reference[decided].argmax(axis=1))


def test_only_the_int8_export_holds_model_tflite(exports):
    assert [precision for precision, path in exports.items()
            if os.path.exists(os.path.join(path, tflite.TFLITE_FILE))] == ["int8"]


def test_an_unknown_precision_is_refused_by_name(exports):
    with pytest.raises(ValueError, match="--export_precision must be one of"):
        classifier_export.export_from_checkpoint(None, None, None, export_precision="int4")


def test_race_int8_export_answers_as_its_float32_savedmodel(tmp_path):
    """RACE's ids signature (`serving_default`, [batch, 4, length]) in model.tflite."""
    from albert_tf.export import race as race_export
    from albert_tf.modeling import multiple_choice
    from albert_tf.serving import tflite_servable
    keras.utils.set_random_seed(0)  # random weights whose answers spread (asserted below)
    config = brown_config()
    model = multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(config), num_choices=4)
    dummy = tf.zeros([1, 4, 2], tf.int32)
    model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy}, training=False)
    for variable in model.checkpoint_variables().values():
        if "output_weights" in variable.path:
            variable.assign(variable * 50.0)  # spread the answers
    prefix = str(tmp_path / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                          in model.checkpoint_variables().items()})
    job = types.SimpleNamespace(albert_config=config, max_seq_length=64,
                                batching=length_buckets.Batching.cut((32, 64)),
                                settings=types.SimpleNamespace(spm_model_file=None))
    model_dir = race_export.export_from_checkpoint(job, prefix, str(tmp_path / "race"),
                                                   export_precision="int8")
    ids = np.random.RandomState(2).randint(5, 4000, (3, 4, 24)).astype(np.int32)
    columns = {"input_ids": ids, "input_mask": np.ones_like(ids),
               "segment_ids": np.zeros_like(ids)}
    reference = tf.saved_model.load(model_dir).signatures["serving_default"](
        **{key: tf.constant(value) for key, value in columns.items()})["probabilities"].numpy()
    runner = tflite_servable.TfliteRunner(model_dir, "race", 1, 64)
    answer = runner.run("serving_default", columns)["probabilities"]
    assert np.ptp(reference) > 0.05, np.ptp(reference)  # five times the tolerance
    np.testing.assert_allclose(answer, reference, atol=0.01)
    _assert_bad_ids_named(runner, columns)
    with pytest.raises(ValueError, match="for RACE"):
        race_export.export_from_checkpoint(job, prefix, str(tmp_path / "x"),
                                           export_precision="bfloat16")


def _assert_bad_ids_named(runner, columns):
    """The int8 runner refuses what the SavedModel's asserts refuse, naming the input (brown
    config: type_vocab_size 2, 64 positions)."""
    from albert_tf import serving
    segments = columns["segment_ids"].copy()
    segments[..., 1] = 7
    with pytest.raises(serving.ServingError, match=r"^input 'segment_ids': values must be in "
                       r"\[0, 2\) \(type_vocab_size\); got 7"):
        runner.run("serving_default", {**columns, "segment_ids": segments})
    long = {name: np.concatenate([value] * 3, axis=-1) for name, value in columns.items()}
    with pytest.raises(serving.ServingError, match=r"^input '\w+': a sequence of \d+ tokens is "
                       r"longer than the model's 64 positions"):
        runner.run("serving_default", long)


# Random-weight SQuAD heads 20 times larger spread the logits over ~10 (v1) and the top
# log-probabilities over ~1-2 (v2). Largest int8 differences seen on _squad_inputs over a
# dozen seeds: 0.017 (v1 logits), 0.042 (v2 end_top_log_probs where the start beams agree),
# 0.013 (cls_logits): a 0.1 tolerance is ~2.4 times that, and every output spreads over more
# than 5 tolerances.
SQUAD_HEAD_SCALE = 20.0
SQUAD_TOLERANCE = 0.1
SQUAD_SEED = 11


def _squad_export(tmp_path, version_2, export_precision, spm_model_file=None):
    """A tiny SQuAD model exported from a checkpoint; v2 with length buckets, so its encoder
    skips padding."""
    from albert_tf.export import squad as squad_export
    from albert_tf.modeling import squad_heads
    config = brown_config()
    keras.utils.set_random_seed(SQUAD_SEED)  # before the export's InGraphTokenizer exists
    model = squad_heads.build_squad_model(encoder.AlbertEncoder(config), version_2, 3, 2)
    squad_export.model_outputs(model, version_2, *[tf.ones([1, 8], tf.int32)] * 3)
    encoder_names = set(model.encoder.checkpoint_variables())
    for name, variable in model.checkpoint_variables().items():
        if name not in encoder_names and len(variable.shape) == 2:
            variable.assign(variable * SQUAD_HEAD_SCALE)
    prefix = str(tmp_path / "model.ckpt-1")
    checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                          in model.checkpoint_variables().items()})
    options = types.SimpleNamespace(version_2_with_negative=version_2, start_n_top=3,
                                    end_n_top=2, max_query_length=16, doc_stride=32,
                                    max_answer_length=10)
    job = types.SimpleNamespace(
        albert_config=config, options=options, max_seq_length=64, do_lower_case=True,
        batching=length_buckets.Batching.cut((32, 64) if version_2 else None),
        spm_model_file=spm_model_file)
    return squad_export.export_from_checkpoint(job, prefix, str(tmp_path / export_precision),
                                               export_precision=export_precision)


def _squad_inputs(batch=4, length=48, seed=3):
    """[CLS] question [SEP] context [SEP]-shaped rows, one of them padded."""
    ids = np.random.RandomState(seed).randint(5, 4000, (batch, length)).astype(np.int32)
    mask, segments = np.ones_like(ids), np.zeros_like(ids)
    segments[:, 12:] = 1
    mask[1, 30:], ids[1, 30:], segments[1, 30:] = 0, 0, 0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _warmup_signatures(model_dir):
    from albert_tf.export import warmup_requests
    from tensorflow_serving.apis import prediction_log_pb2
    names = set()
    for record in tf.data.TFRecordDataset(os.path.join(model_dir, warmup_requests.WARMUP_FILE)):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        names.add(log.predict_log.request.model_spec.signature_name)
    return names


@pytest.mark.slow
@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
def test_squad_int8_export_answers_as_its_float32_savedmodel(tmp_path, version_2):
    """SQuAD's `serving_default` in the version's model.tflite, served as
    --prefer_tflite_model does; the original's float32 albert_model.tflite is still written."""
    from albert_tf.export import squad as squad_export
    from albert_tf.serving import tflite_servable
    paths = _squad_export(tmp_path, version_2, "int8")
    model_dir = paths["saved_model"]
    assert os.path.basename(paths["tflite"]) == squad_export.TFLITE_NAME
    interpreter = litert.Interpreter(model_path=os.path.join(model_dir, tflite.TFLITE_FILE))
    assert list(interpreter.get_signature_list()) == ["serving_default"]
    columns = _squad_inputs()
    reference = {key: value.numpy() for key, value in tf.saved_model.load(model_dir).signatures[
        "serving_default"](**{key: tf.constant(value) for key, value in columns.items()}).items()}
    runner = tflite_servable.load_runner(model_dir, "squad", 1, 64)
    assert isinstance(runner, tflite_servable.TfliteRunner)
    answer = runner.run("serving_default", columns)
    assert set(answer) == set(reference)
    _assert_bad_ids_named(runner, columns)
    # v2's end beams belong to the start beam's positions: compared where those agree.
    rows = (np.all(answer["start_top_index"] == reference["start_top_index"], 1) if version_2
            else np.ones(len(columns["input_ids"]), bool))
    assert rows.any()
    for key, expected in reference.items():
        if "index" not in key:
            assert np.ptp(expected) > 5 * SQUAD_TOLERANCE, key
            compared = rows if key.startswith("end_top") else slice(None)
            np.testing.assert_allclose(answer[key][compared], expected[compared],
                                       atol=SQUAD_TOLERANCE, err_msg=key)
    start_agrees = None
    for name, (top, scores) in _top_two(answer, columns, version_2).items():
        expected_top, expected_scores = _top_two(reference, columns, version_2)[name]
        # The top-1 position agrees wherever the float32 runner-up trails by more than the
        # tolerance (random heads leave near-ties; rounding may swap those); v2's best end is
        # the best start's, compared where the starts agree.
        clear = expected_scores[:, 0] - expected_scores[:, 1] > SQUAD_TOLERANCE
        if version_2 and start_agrees is not None:
            clear &= start_agrees
        assert clear.any(), name
        np.testing.assert_array_equal(top[clear], expected_top[clear], err_msg=name)
        start_agrees = top == expected_top


def _top_two(outputs, columns, version_2):
    """{start, end: (top-1 position [B], the two best scores [B, 2])}; v2: the beam's first
    start and that start's best end."""
    if version_2:
        return {"start": (outputs["start_top_index"][:, 0], outputs["start_top_log_probs"]),
                "end": (outputs["end_top_index"][:, 0], outputs["end_top_log_probs"][:, :2])}
    result = {}
    for name in ("start", "end"):
        logits = np.where(columns["input_mask"] == 1, outputs[f"{name}_logits"], -np.inf)
        result[name] = (np.argmax(logits, 1), -np.sort(-logits, 1)[:, :2])
    return result


@pytest.mark.slow
def test_squad_int8_is_the_only_export_with_model_tflite_and_warms_up_what_it_serves(
        tmp_path, spm_model_file):
    """With the raw-text `answer` signature in the SavedModel: the int8 version warms up only
    `serving_default`, the one signature its model.tflite holds."""
    from albert_tf.export import squad as squad_export
    versions = {precision: _squad_export(tmp_path, False, precision, spm_model_file)[
        "saved_model"] for precision in squad_export.EXPORT_PRECISIONS}
    assert [precision for precision, path in versions.items()
            if os.path.exists(os.path.join(path, tflite.TFLITE_FILE))] == ["int8"]
    assert _warmup_signatures(versions["float32"]) == {"serving_default", "answer"}
    assert _warmup_signatures(versions["int8"]) == {"serving_default"}
    with pytest.raises(ValueError, match="--export_precision must be one of .* for SQuAD"):
        squad_export.export_from_checkpoint(None, None, None, export_precision="bfloat16")


def test_bfloat16_weights_answer_exactly_as_float32_weights_cast_per_call():
    """The bfloat16 export's policy (weights rounded to bfloat16 once) gives the outputs of the
    mixed_bfloat16 policy (float32 weights rounded at every call), bit for bit: storing the
    weights in bfloat16 changes the bytes read, not the answers."""
    keras.utils.set_random_seed(0)
    config = brown_config()
    models = {}
    for policy in ("mixed_bfloat16", "bfloat16"):
        previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy(policy)
        try:
            models[policy] = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 2)
        finally:
            keras.config.set_dtype_policy(previous)
    for name, variable in models["bfloat16"].checkpoint_variables().items():
        variable.assign(models["mixed_bfloat16"].checkpoint_variables()[name])
    ids = tf.constant(np.random.RandomState(0).randint(5, 4000, (8, 30)), tf.int32)
    mask = tf.constant((np.arange(30)[None] < np.random.RandomState(1).randint(5, 31, (8, 1)))
                       .astype(np.int32))
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)}
    logits = {policy: model(inputs, training=False)["logits"].numpy()
              for policy, model in models.items()}
    assert {variable.dtype for variable in models["bfloat16"].checkpoint_variables().values()
            } == {"bfloat16", "float32"}  # products' weights; LayerNorm, tables and head
    assert np.ptp(logits["mixed_bfloat16"]) > 0  # the answers differ between examples
    np.testing.assert_array_equal(logits["bfloat16"], logits["mixed_bfloat16"])
