"""The version lifecycle of TF Serving's model manager, on the built-in server's
`ServedVersions`: load retries, availability-preserving transitions, END with the error, version
policies and labels."""

import os
import shutil
import threading
import time


from tensorflow.core.protobuf import error_codes_pb2
from tensorflow_serving.apis import get_model_status_pb2

from albert_tf import serving
from albert_tf.serving import rest_json
from tests.serving_toy_model import write_version


def _corrupt(base, version):
    os.makedirs(os.path.join(base, str(version)))
    with open(os.path.join(base, str(version), "saved_model.pb"), "wb") as writer:
        writer.write(b"not a SavedModel")


def _wait_for(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _states(versions):
    return {int(entry["version"]): (entry["state"], entry["status"]["error_message"] != "")
            for entry in rest_json.model_status(versions.status())["model_version_status"]}


def test_two_broken_newer_versions_never_take_the_slots_of_a_good_one(tmp_path):
    base = str(tmp_path)
    write_version(base, 1)
    _corrupt(base, 2)
    _corrupt(base, 3)
    versions = serving.ServedVersions(base, "m", num_versions=2, max_num_load_retries=1,
                                      retry_interval_secs=0.01)
    assert versions.get().version == 1
    assert _states(versions) == {3: ("END", True), 2: ("END", True), 1: ("AVAILABLE", False)}
    assert versions.get(3) is None  # neither broken version is served
    # Appearing while version 1 is served: the same.
    write_version(base, 4)
    _corrupt(base, 5)
    _corrupt(base, 6)
    versions.refresh()
    assert versions.get().version == 4 and versions.get(1).version == 1  # newest two good ones
    assert _states(versions)[6] == ("END", True)


def test_a_version_copied_in_non_atomically_is_retried_and_served_once_complete(tmp_path):
    base, staging = str(tmp_path / "base"), str(tmp_path / "staging")
    os.makedirs(base)
    write_version(base, 1)
    write_version(staging, 2, offset=10.0)
    versions = serving.ServedVersions(base, "m", max_num_load_retries=50,
                                      retry_interval_secs=0.05)
    versions.start_polling(0.05)
    try:
        os.makedirs(os.path.join(base, "2"))  # saved_model.pb first, variables/ later
        shutil.copy(os.path.join(staging, "2", "saved_model.pb"), os.path.join(base, "2"))
        _wait_for(lambda: _states(versions).get(2, ("",))[0] == "LOADING")
        time.sleep(0.3)  # several failed attempts
        assert versions.get().version == 1  # served all along
        for name in os.listdir(os.path.join(staging, "2")):
            source, target = os.path.join(staging, "2", name), os.path.join(base, "2", name)
            if os.path.isdir(source):
                shutil.copytree(source, target)
            elif name != "saved_model.pb":
                shutil.copy(source, target)
        # An unloaded version stays listed as END (TF Serving's servable state monitor).
        _wait_for(lambda: _states(versions) == {2: ("AVAILABLE", False), 1: ("END", False)})
        assert versions.get().version == 2
    finally:
        versions.stop_polling()


def test_a_version_is_unloaded_only_once_a_newer_one_is_available(tmp_path):
    base = str(tmp_path)
    write_version(base, 1)
    release = threading.Event()

    def slow_loader(model_dir, model_name, version, max_batch_size):
        if version == 2:
            release.wait(30)
        return serving.ModelRunner(model_dir, model_name, version, max_batch_size)

    versions = serving.ServedVersions(base, "m", loader=slow_loader)
    versions.start_polling(0.05)
    try:
        write_version(base, 2)
        _wait_for(lambda: 2 in _states(versions))
        assert _states(versions) == {2: ("LOADING", False), 1: ("AVAILABLE", False)}
        assert versions.get().version == 1
        release.set()
        # An unloaded version stays listed as END (TF Serving's servable state monitor).
        _wait_for(lambda: _states(versions) == {2: ("AVAILABLE", False), 1: ("END", False)})
    finally:
        release.set()
        versions.stop_polling()


def test_a_load_that_never_succeeds_ends_with_its_error_after_the_retries(tmp_path):
    base = str(tmp_path)
    write_version(base, 1)
    attempts = []

    def failing_loader(model_dir, model_name, version, max_batch_size):
        if version == 2:
            attempts.append(time.monotonic())
            raise OSError("disk on fire")
        return serving.ModelRunner(model_dir, model_name, version, max_batch_size)

    versions = serving.ServedVersions(base, "m", max_num_load_retries=3, retry_interval_secs=0.05,
                                      loader=failing_loader)
    write_version(base, 2)
    versions.refresh()
    assert len(attempts) == 4 and attempts[-1] - attempts[0] >= 3 * 0.05
    (entry,) = [e for e in rest_json.model_status(versions.status())["model_version_status"] if e["version"] == "2"]
    assert entry["state"] == "END" and "disk on fire" in entry["status"]["error_message"]
    assert versions.get().version == 1


def test_version_policies_and_labels(tmp_path):
    base = str(tmp_path)
    for version in (1, 2, 3):
        write_version(base, version, offset=float(version))
    served = serving.ServedVersions(base, "m")  # TF Serving's default: the latest only
    assert [e["version"] for e in rest_json.model_status(served.status())["model_version_status"]] == ["3"]
    served = serving.ServedVersions(base, "m", policy=serving.VersionPolicy("all"))
    assert [e["version"] for e in rest_json.model_status(served.status())["model_version_status"]] == ["3", "2", "1"]
    served = serving.ServedVersions(base, "m", policy=serving.VersionPolicy("specific", versions=[1, 3]),
                                    labels={"stable": 1, "canary": 3})
    assert [e["version"] for e in rest_json.model_status(served.status())["model_version_status"]] == ["3", "1"]
    assert served.labels == {"stable": 1, "canary": 3}
    assert served.get(1).version == 1 and served.get(3).version == 3 and served.get(2) is None


def test_a_folder_that_is_not_a_version_number_is_logged_once_as_skipped(tmp_path, caplog):
    base = str(tmp_path)
    write_version(base, 1)
    for name in ("v4", "latest", "4a", "4.0"):
        shutil.copytree(os.path.join(base, "1"), os.path.join(base, name))
    os.makedirs(os.path.join(base, ".tmp-host-1-x"))  # an export being written: not reported
    with open(os.path.join(base, "README"), "w") as writer:  # a file: not a folder
        writer.write("models")
    versions = serving.ServedVersions(base, "m")
    versions.refresh()
    versions.refresh()
    skipped = [record.getMessage() for record in caplog.records if "not a version" in
               record.getMessage()]
    assert sorted(message.split(":")[0] for message in skipped) == sorted(
        os.path.join(base, name) for name in ("v4", "latest", "4a", "4.0"))
    assert versions.get().version == 1


def test_status_is_tf_servings_proto_printed_as_its_rest_json(tmp_path):
    """GetModelStatus is built as TF Serving's GetModelStatusResponse (what gRPC sends as
    is) and printed for REST as ProcessModelStatusRequest prints it."""
    base = str(tmp_path)
    write_version(base, 1)
    _corrupt(base, 2)
    versions = serving.ServedVersions(base, "m", policy=serving.VersionPolicy("all"),
                                      max_num_load_retries=0)
    response = versions.status()
    assert isinstance(response, get_model_status_pb2.GetModelStatusResponse)
    broken, good = response.model_version_status
    assert (broken.version, broken.state, broken.status.error_code) == (
        2, get_model_status_pb2.ModelVersionStatus.END, error_codes_pb2.UNKNOWN)
    assert (good.version, good.state, good.status.error_code) == (
        1, get_model_status_pb2.ModelVersionStatus.AVAILABLE, error_codes_pb2.OK)
    assert rest_json.model_status(response)["model_version_status"][1] == {
        "version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
