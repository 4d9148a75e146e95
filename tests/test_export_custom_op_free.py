"""The GLUE export without custom ops, its separate text preprocessor, and TF Serving's Classify /
Regress signatures: stock TensorFlow (no tensorflow_text) loads and runs the ids model, and
preprocessor + ids model give the combined model's answers."""

import base64
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.export import classifier as classifier_export
from albert_tf.export import preprocessor
from albert_tf.serving import rest_json
from tests.conftest import REPO_ROOT
from tests.serving_fixtures import LABELS, MAX_SEQ_LENGTH, tiny_classifier_signatures

SENTENCES = ["a gripping, beautifully acted film", "dull", "the plot makes no sense at all"]

# Runs in a fresh interpreter: loads the ids model with nothing that registers tensorflow_text's
# ops, runs `ids` and `classify`, and proves tensorflow_text was never imported.
_FRESH_PROCESS = """
import json, sys
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
ids = json.loads(sys.argv[2])
tensors = {name: tf.constant(value, tf.int32) for name, value in ids.items()}
probabilities = model.signatures["ids"](**tensors)["probabilities"].numpy().tolist()
examples = [tf.train.Example(features=tf.train.Features(feature={
    name: tf.train.Feature(int64_list=tf.train.Int64List(value=ids[name][row]))
    for name in ids})).SerializeToString() for row in range(len(ids["input_ids"]))]
scores = model.signatures["classify"](inputs=tf.constant(examples))["scores"].numpy().tolist()
print(json.dumps({"probabilities": probabilities, "scores": scores,
                  "tensorflow_text_loaded": "tensorflow_text" in sys.modules}))
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory, spm_model_file):
    signatures = tiny_classifier_signatures(spm_model_file)
    root = tmp_path_factory.mktemp("exports")
    return {
        "combined": classifier_export.write_saved_model(signatures, str(root / "combined")),
        "ids_only": classifier_export.write_saved_model(signatures, str(root / "ids_only"),
                                                        include_text=False),
        "preprocessor": preprocessor.write_preprocessor(spm_model_file, True, MAX_SEQ_LENGTH,
                                                        str(root / "preprocessor")),
    }


def _fresh_env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


@pytest.mark.slow
def test_ids_export_runs_without_tensorflow_text_and_matches_the_combined_model(exports):
    combined = tf.saved_model.load(exports["combined"])
    packed = tf.saved_model.load(exports["preprocessor"]).signatures["serving_default"](
        text_a=tf.constant(SENTENCES), text_b=tf.constant([""] * len(SENTENCES)))
    ids = {name: packed[name].numpy().tolist() for name in ("input_ids", "input_mask", "segment_ids")}
    expected = combined.signatures["text"](text_a=tf.constant(SENTENCES),
                                           text_b=tf.constant([""] * len(SENTENCES)))
    result = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, exports["ids_only"],
                             json.dumps(ids)], cwd=REPO_ROOT, env=_fresh_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["tensorflow_text_loaded"] is False
    np.testing.assert_allclose(answer["probabilities"], expected["probabilities"].numpy(), atol=1e-6)
    np.testing.assert_allclose(answer["scores"], expected["probabilities"].numpy(), atol=1e-6)


@pytest.mark.slow
def test_saved_model_cli_runs_the_ids_export_but_not_the_combined_one(exports):
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    inputs = "input_ids=[[2,10,3]];input_mask=[[1,1,1]];segment_ids=[[0,0,0]]"
    command = [cli, "run", "--tag_set", "serve", "--signature_def", "ids", "--input_exprs", inputs]
    ran = subprocess.run(command + ["--dir", exports["ids_only"]], env=_fresh_env(),
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "probabilities" in ran.stdout
    refused = subprocess.run(command + ["--dir", exports["combined"]], env=_fresh_env(),
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0
    assert "not registered" in refused.stderr  # the SentencePiece op needs tensorflow_text


def _rest(verb, runner, document):
    """The REST API's JSON answer to `document` (`:predict`, `:classify`, `:regress`) by `runner`."""
    return getattr(rest_json, verb)(document, lambda: runner)


@pytest.mark.slow
def test_classify_and_regress_signatures_of_the_glue_export(exports, spm_model_file, tmp_path):
    regression = classifier_export.write_saved_model(
        tiny_classifier_signatures(spm_model_file, regression=True), str(tmp_path / "stsb"),
        include_text=False)
    ids = {"input_ids": [[2, 10, 3], [2, 11, 12]], "input_mask": [[1, 1, 1]] * 2,
           "segment_ids": [[0, 0, 0]] * 2}
    examples = [{name: ids[name][row] for name in ids} for row in range(2)]
    runner = serving.ModelRunner(exports["ids_only"], "c", 1)
    expected = _rest("predict", runner, {"signature_name": "ids", "inputs": ids})["outputs"]
    answer = _rest("classify", runner, {"signature_name": "classify", "examples": examples})["results"]
    assert [[label for label, _ in row] for row in answer] == [LABELS, LABELS]
    np.testing.assert_allclose([[score for _, score in row] for row in answer],
                               expected["probabilities"], atol=1e-6)
    # Unpadded ids give the padded answer: padding is optional in classify's examples.
    padded = [{name: values + [0] * 5 for name, values in example.items()}
              for example in examples]
    np.testing.assert_allclose(
        [[score for _, score in row] for row in _rest("classify", runner, {"signature_name": "classify", "examples": padded})["results"]],
        expected["probabilities"], atol=1e-5)
    for bad, message in [({"input_ids": [2, 5000, 3]}, "vocab_size"),
                         ({"segment_ids": [0, 0, 7]}, "type_vocab_size"),
                         ({"input_mask": [1, 1]}, "differ in length")]:
        with pytest.raises(serving.ServingError, match=message):
            _rest("classify", runner, {"signature_name": "classify",
                             "examples": [dict(examples[0], **bad)]})
    with pytest.raises(serving.ServingError, match="input_ids must be >= 0"):
        _rest("predict", runner, {"signature_name": "ids", "inputs": dict(ids, input_ids=[[2, -1, 3]] * 2)})

    # serving_default's serialized tf.Examples (padded to max_seq_length, so their last bytes
    # are NULs, which numpy's bytes arrays would drop) sent as b64, TF Serving's binary form.
    serialized = [{"b64": base64.b64encode(tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(int64_list=tf.train.Int64List(
            value=values + [0] * (MAX_SEQ_LENGTH - len(values))))
        for name, values in example.items()})).SerializeToString()).decode()}
        for example in examples]
    np.testing.assert_allclose(
        _rest("predict", runner, {"inputs": {"serialized_example": serialized}})["outputs"]["probabilities"],
        expected["probabilities"], atol=1e-5)

    regress = serving.ModelRunner(regression, "r", 1)
    scores = _rest("predict", regress, {"signature_name": "ids", "inputs": ids})["outputs"]["predictions"]
    np.testing.assert_allclose(_rest("regress", regress, {"signature_name": "regress", "examples": examples})["results"], scores, atol=1e-6)
