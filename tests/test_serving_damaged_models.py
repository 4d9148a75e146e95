"""A version that cannot load never takes the server down: a damaged `model.tflite`
(truncated, empty, random bytes, another flatbuffer schema) is refused before native code reads
it, naming the file. At start-up serve.py exits 2 with one line; as a new version the version
is END with its reason in GetModelStatus and the log, and the version serving keeps answering."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
import warnings

import flatbuffers
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.export import tflite
from albert_tf.serving import tflite_servable
from tests.conftest import REPO_ROOT, script_env
from tests.serving_toy_model import write_version


def write_tflite_version(base, version):
    """A toy version whose `ids` signature (sums of int32 ids) is also its `model.tflite`."""
    path = write_version(base, version)
    converter = tf.lite.TFLiteConverter.from_saved_model(path, signature_keys=["ids"])
    with open(os.path.join(path, tflite.TFLITE_FILE), "wb") as writer:
        writer.write(converter.convert())
    return path


def _wrong_schema():
    """A well-formed flatbuffer with TFLite's identifier whose fields are not a Model's."""
    builder = flatbuffers.Builder(0)
    text = builder.CreateString("not a model")
    builder.StartVector(4, 1, 4)
    builder.PrependUOffsetTRelative(text)
    strings = builder.EndVector()
    builder.StartObject(3)
    builder.PrependUint32Slot(0, 3, 0)
    builder.PrependUOffsetTRelativeSlot(2, strings, 0)
    builder.Finish(builder.EndObject(), file_identifier=b"TFL3")
    return bytes(builder.Output())


DAMAGES = {  # name: (damaged bytes from the good file's, what the refusal says)
    "truncated": (lambda good: good[:len(good) // 2], "damaged or truncated TFLite model"),
    "empty": (lambda good: b"", "the file is empty"),
    "random": (lambda good: os.urandom(len(good)), "not a TFLite model: its file identifier"),
    "wrong_schema": (lambda good: _wrong_schema(), "damaged or truncated TFLite model"),
}


@pytest.fixture(scope="module")
def good_version(tmp_path_factory):
    return write_tflite_version(str(tmp_path_factory.mktemp("tflite")), 1)


def _damaged_copy(good_version, base, version, damage):
    path = shutil.copytree(good_version, os.path.join(base, f".copy-{version}"))
    model = os.path.join(path, tflite.TFLITE_FILE)
    with open(model, "rb") as reader:
        good = reader.read()
    with open(model, "wb") as writer:
        writer.write(DAMAGES[damage][0](good))
    os.rename(path, os.path.join(base, str(version)))
    return os.path.join(base, str(version), tflite.TFLITE_FILE)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_model_tflite_is_refused_naming_the_file(good_version, tmp_path, damage):
    path = _damaged_copy(good_version, str(tmp_path), 2, damage)
    with pytest.raises(serving.ServingError) as error:
        tflite_servable.TfliteRunner(os.path.dirname(path), "m", 2, 8)
    assert str(error.value).startswith(f"{path}: ")
    assert DAMAGES[damage][1] in str(error.value) and "\n" not in str(error.value)


def _serve(base, *flags):
    return subprocess.Popen(
        [sys.executable, "serve.py", f"--model_base_path={base}", "--model_name=m",
         "--use_model_server=false", "--prefer_tflite_model", "--rest_api_port=0", "--port=0",
         "--max_num_load_retries=0", "--file_system_poll_wait_seconds=0.1", *flags],
        cwd=REPO_ROOT, env=script_env(), stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_serve_py_refuses_a_damaged_only_version_in_one_line(good_version, tmp_path):
    path = _damaged_copy(good_version, str(tmp_path), 1, "truncated")
    process = _serve(str(tmp_path))
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 2, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert path in last and "damaged or truncated TFLite model" in last
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_damaged_new_versions_never_take_the_server_down(good_version, tmp_path):
    """Each damage arrives as a newer version while a client keeps asking version 1: every
    answer comes from version 1, each damaged version is END with its reason, and the server
    is still running at the end."""
    base = str(tmp_path)
    shutil.copytree(good_version, os.path.join(base, "1"))
    process = _serve(base)
    log = []
    reader = threading.Thread(target=lambda: log.extend(process.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not any("(REST)" in line for line in log):
        assert process.poll() is None and time.monotonic() < deadline, "".join(log)[-3000:]
        time.sleep(0.1)
    port = int(re.search(r"http://[^:]+:(\d+) \(REST\)", "".join(log)).group(1))
    url = f"http://127.0.0.1:{port}/v1/models/m"
    body = json.dumps({"signature_name": "ids", "inputs": {"ids": [[1, 2, 3]]}}).encode()
    answers, stop = [], threading.Event()

    def ask():
        while not stop.is_set():
            with urllib.request.urlopen(urllib.request.Request(f"{url}:predict", data=body),
                                        timeout=30) as response:
                answers.append(json.loads(response.read())["outputs"]["total"])
            time.sleep(0.02)
    client = threading.Thread(target=ask, daemon=True)
    client.start()
    try:
        for version, damage in enumerate(sorted(DAMAGES), start=2):
            path = _damaged_copy(good_version, base, version, damage)
            while True:  # until the version has ended
                with urllib.request.urlopen(url, timeout=30) as response:
                    status = {entry["version"]: entry for entry in
                              json.loads(response.read())["model_version_status"]}
                if status.get(str(version), {}).get("state") == "END":
                    break
                assert process.poll() is None, "".join(log)[-3000:]
                assert time.monotonic() < deadline
                time.sleep(0.1)
            message = status[str(version)]["status"]["error_message"]
            assert path in message and DAMAGES[damage][1] in message
            assert status["1"]["state"] == "AVAILABLE"
            while not any(path in line and "failed to load" in line for line in log):
                assert time.monotonic() < deadline  # the log reader may lag the status call
                time.sleep(0.1)
        answered = len(answers)
        time.sleep(0.3)
        assert process.poll() is None and client.is_alive() and len(answers) > answered
        assert answers and all(answer == [6] for answer in answers)
    finally:
        stop.set()
        process.terminate()
        process.wait(60)


def test_a_good_model_tflite_loads_on_litert_without_a_deprecation_warning(good_version):
    """tf.lite.Interpreter warned at every --prefer_tflite_model start that it is deprecated
    (naming TF 2.20 under 2.21); LiteRT's interpreter is its maintained successor."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner = tflite_servable.TfliteRunner(good_version, "m", 1, 8)
    assert not [warning for warning in caught if "deprecat" in str(warning.message).lower()]
    assert runner.run("ids", {"ids": np.array([[1, 2, 3]], np.int32)})["total"].tolist() == [6]


# --- damaged SavedModel files (issue 51) --------------------------------------------------------

def _cut(path, keep):
    with open(path, "rb") as reader:
        data = reader.read()
    with open(path, "wb") as writer:
        writer.write(data[:keep(len(data))])


SAVED_MODEL_DAMAGES = {  # name: (damaged file, how it is damaged, what the refusal says)
    "pb_empty": ("saved_model.pb", lambda p: _cut(p, lambda n: 0), "the file is empty"),
    "pb_truncated": ("saved_model.pb", lambda p: _cut(p, lambda n: n // 2),
                     "damaged or truncated SavedModel"),
    "pb_not_a_proto": ("saved_model.pb", lambda p: open(p, "wb").write(b"\xff" * 64),
                       "damaged or truncated SavedModel"),
    "index_empty": ("variables/variables.index", lambda p: _cut(p, lambda n: 0),
                    "the file is empty"),
    "index_truncated": ("variables/variables.index", lambda p: _cut(p, lambda n: n // 2),
                        "damaged or truncated checkpoint index"),
    "shard_truncated": ("variables/variables.data-00000-of-00001",
                        lambda p: _cut(p, lambda n: n // 2), "damaged or truncated variables"),
    "shard_missing": ("variables/variables.data-00000-of-00001", os.remove, "missing"),
    "asset_missing": ("assets/vocab.txt", os.remove, "missing: an asset file"),
}


class _WithAsset(tf.Module):
    """A toy version whose graph reads an asset (a vocabulary table), as the text export does."""

    def __init__(self, folder):
        super().__init__()
        vocab = os.path.join(folder, "vocab.txt")
        with open(vocab, "w") as writer:
            writer.write("a\nb\n")
        self.table = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
            vocab, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER), -1)
        self.scale = tf.Variable(tf.ones([1000]))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x")])
    def predict(self, x):
        return {"y": self.table.lookup(x), "s": tf.fill(tf.shape(x), tf.reduce_sum(self.scale))}


@pytest.fixture(scope="module")
def good_saved_model(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("with_asset"))
    module = _WithAsset(folder)
    path = os.path.join(folder, "model")
    tf.saved_model.save(module, path, signatures={"serving_default": module.predict})
    return path


def _damaged_saved_model(good, base, version, damage):
    copy = shutil.copytree(good, os.path.join(base, f".copy-{version}"))
    name, spoil, _ = SAVED_MODEL_DAMAGES[damage]
    spoil(os.path.join(copy, name))
    os.rename(copy, os.path.join(base, str(version)))
    return os.path.join(base, str(version), name)


@pytest.mark.parametrize("damage", sorted(SAVED_MODEL_DAMAGES))
def test_a_damaged_saved_model_is_refused_naming_the_file(good_saved_model, tmp_path, damage):
    path = _damaged_saved_model(good_saved_model, str(tmp_path), 2, damage)
    with pytest.raises(serving.ServingError) as error:
        serving.ModelRunner(os.path.join(str(tmp_path), "2"), "m", 2)
    assert str(error.value).startswith(f"{path}: "), str(error.value)
    assert SAVED_MODEL_DAMAGES[damage][2] in str(error.value) and "\n" not in str(error.value)


def test_damaged_saved_model_versions_end_and_the_old_one_answers(good_saved_model, tmp_path):
    base = str(tmp_path)
    shutil.copytree(good_saved_model, os.path.join(base, "1"))
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="m", rest_api_port=0, max_num_load_retries=0,
        file_system_poll_wait_seconds=0.05))
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models/m"
    body = json.dumps({"instances": ["b"]}).encode()
    try:
        for version, damage in enumerate(sorted(SAVED_MODEL_DAMAGES), start=2):
            path = _damaged_saved_model(good_saved_model, base, version, damage)
            deadline = time.monotonic() + 60
            while True:
                with urllib.request.urlopen(url, timeout=30) as response:
                    status = {entry["version"]: entry for entry in
                              json.loads(response.read())["model_version_status"]}
                if status.get(str(version), {}).get("state") == "END":
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
            message = status[str(version)]["status"]["error_message"]
            assert path in message and SAVED_MODEL_DAMAGES[damage][2] in message, message
            assert status["1"]["state"] == "AVAILABLE"
            with urllib.request.urlopen(urllib.request.Request(f"{url}:predict", data=body),
                                        timeout=30) as response:
                assert json.loads(response.read())["predictions"] == [{"y": 1, "s": 1000.0}]
    finally:
        server.shutdown()


@pytest.mark.slow
def test_serve_py_names_a_damaged_saved_model_file_in_one_line(good_saved_model, tmp_path):
    path = _damaged_saved_model(good_saved_model, str(tmp_path), 1, "index_empty")
    process = subprocess.Popen(
        [sys.executable, "serve.py", f"--model_base_path={tmp_path}", "--model_name=m",
         "--use_model_server=false", "--rest_api_port=0", "--port=0",
         "--max_num_load_retries=0"], cwd=REPO_ROOT, env=script_env(), stderr=subprocess.PIPE,
        text=True)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 2, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert path in last and "version: 1" in last and "the file is empty" in last, last
    assert "Traceback" not in stderr
