"""TF Serving's model warm-up: the GLUE export writes `assets.extra/tf_serving_warmup_requests`
(PredictionLogs for every signature and length bucket) and the built-in server replays it before
a version is served; a warm-up request that fails fails the load."""

import os

import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from albert_tf import serving
from albert_tf.export import classifier as classifier_export
from albert_tf.export import warmup_requests
from albert_tf.serving import model_runner, rest_json, server_core, warmup
from albert_tf.training import length_buckets
from tests.serving_fixtures import MAX_SEQ_LENGTH, tiny_classifier_signatures


def _logs(model_dir):
    path = os.path.join(model_dir, "assets.extra", "tf_serving_warmup_requests")
    logs = []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        logs.append(prediction_log_pb2.PredictionLog.FromString(record))
    return logs


def _signature(log):
    kind = log.WhichOneof("log_type")
    return kind, getattr(log, kind).request.model_spec.signature_name


@pytest.mark.slow
def test_export_writes_a_request_per_signature_and_bucket_and_the_server_replays_them(
        tmp_path, spm_model_file):
    signatures = tiny_classifier_signatures(spm_model_file)
    model_dir = classifier_export.write_saved_model(signatures, str(tmp_path / "export"))
    logs = _logs(model_dir)
    buckets = length_buckets.default_buckets(MAX_SEQ_LENGTH)  # 16, 32, 64
    names = set(model_runner.served(model_runner.all_signature_defs(model_dir)))
    assert names == {"serving_default", "ids", "classify", "text"}
    assert sorted(_signature(log) for log in logs) == sorted(
        [("predict_log", "ids"), ("predict_log", "serving_default"),
         ("classify_log", "classify"), ("predict_log", "text")] * len(buckets))
    # Each request runs the model at its own bucket length.
    id_lengths = [tf.make_ndarray(log.predict_log.request.inputs["input_ids"]).shape[1]
                  for log in logs if _signature(log) == ("predict_log", "ids")]
    assert id_lengths == list(buckets)
    texts = [tf.make_ndarray(log.predict_log.request.inputs["text_a"])[0]
             for log in logs if _signature(log) == ("predict_log", "text")]
    packed = [int(signatures.tokenizer.tokenize(tf.constant([text])).row_lengths()[0]) + 2
              for text in texts]
    assert [next(b for b in buckets if b >= n) for n in packed] == list(buckets)

    runner = serving.ModelRunner(model_dir, "albert", 1)
    assert warmup.replay(runner) == len(logs)
    loaded = serving.ServedVersions(os.path.dirname(model_dir), "albert",
                                    loader=server_core.version_loader(serving.ServerOptions()))
    assert rest_json.model_status(loaded.status())["model_version_status"][0]["state"] == (
        "AVAILABLE")


def test_a_failing_warmup_request_fails_the_load(tmp_path):
    from tests.serving_toy_model import write_version
    base = str(tmp_path)
    write_version(base, 1)
    path = write_version(base, 2)
    warmup_requests.write(path, [warmup_requests.predict_log("no_such_signature", {"x": [1.0]})])
    versions = serving.ServedVersions(base, "m", max_num_load_retries=0,
                                      loader=server_core.version_loader(serving.ServerOptions()))
    status = {e["version"]: e
              for e in rest_json.model_status(versions.status())["model_version_status"]}
    assert status["2"]["state"] == "END"
    assert "warm-up record 1 failed" in status["2"]["status"]["error_message"]
    assert versions.get().version == 1
    # --enable_model_warmup=false: the file is not read and the version loads.
    versions = serving.ServedVersions(base, "m", loader=server_core.version_loader(
        serving.ServerOptions(enable_model_warmup=False)))
    assert versions.get().version == 2


@pytest.mark.slow
def test_squad_and_race_exports_write_warmup_requests_that_replay(tmp_path, spm_model_file):
    from albert_tf.text import tf_tokenization
    from albert_tf.export import race as race_export, squad as squad_export
    from albert_tf.modeling import encoder, multiple_choice, squad_heads
    from albert_tf.race import graph_features
    from tests.conftest import brown_config
    config = brown_config(max_position_embeddings=64)
    tokenizer = tf_tokenization.InGraphTokenizer(spm_model_file, True)
    squad_dir = squad_export.write_saved_model(squad_export.SquadSignatures(
        squad_heads.build_squad_model(encoder.AlbertEncoder(config), True, start_n_top=2, end_n_top=2), True, 64, 12,
        16, 8, tokenizer), str(tmp_path / "squad"))
    race_dir = race_export.export_saved_model(
        multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(config, skip_padding=True)), str(tmp_path / "race"),
        graph_features.RaceTextEncoder(tokenizer, 64, 24))
    for model_dir, answer_signature in ((squad_dir, "answer"), (race_dir, "text")):
        logs = _logs(model_dir)
        assert sorted({_signature(log)[1] for log in logs}) == sorted(
            model_runner.served(model_runner.all_signature_defs(model_dir)))
        lengths = [tf.make_ndarray(log.predict_log.request.inputs["input_ids"]).shape[-1]
                   for log in logs if _signature(log)[1] == "serving_default"]
        assert lengths == [16, 32, 64]
        assert warmup.replay(serving.ModelRunner(model_dir, "m", 1)) == len(logs) == 4


@pytest.mark.parametrize("buckets, lengths", [((32, 64), [32, 64]), (None, [64])])
def test_squad_and_race_exports_warm_up_at_the_run_s_lengths(tmp_path, tiny_config, buckets,
                                                             lengths):
    """`export_from_checkpoint` warms each export at the lengths its run's batches had: the
    run's buckets, or max_seq_length alone after --length_buckets=off."""
    import types
    from albert_tf import checkpoints
    from albert_tf.export import race as race_export, squad as squad_export
    from albert_tf.modeling import encoder, multiple_choice, squad_heads
    from albert_tf.squad import run as squad_run
    batching = length_buckets.Batching.cut(buckets)
    job = types.SimpleNamespace(
        albert_config=tiny_config, max_seq_length=64, batching=batching, spm_model_file=None,
        do_lower_case=True, settings=types.SimpleNamespace(spm_model_file=None),
        options=squad_run.SquadRun(version_2_with_negative=True, start_n_top=2, end_n_top=2))
    exports = {}
    for name, model in (("race", multiple_choice.AlbertMultipleChoice(encoder.AlbertEncoder(tiny_config))),
                        ("squad", squad_heads.build_squad_model(encoder.AlbertEncoder(tiny_config), True, 2, 2))):
        prefix = str(tmp_path / name / "model.ckpt-1")
        checkpoints.write_checkpoint(prefix, {n: v.numpy() for n, v
                                              in model.checkpoint_variables().items()})
        exports[name] = prefix
    race_dir = race_export.export_from_checkpoint(job, exports["race"], str(tmp_path / "race_x"))
    squad_dir = squad_export.export_from_checkpoint(job, exports["squad"],
                                                    str(tmp_path / "squad_x"))["saved_model"]
    for model_dir in (race_dir, squad_dir):
        assert [tf.make_ndarray(log.predict_log.request.inputs["input_ids"]).shape[-1]
                for log in _logs(model_dir)] == lengths
