"""TF Serving's ServerCore cases on model config reloads, ported: each test names the test of
tensorflow_serving/model_servers/server_core_test.cc (or the source) it follows, and sends the
config with gRPC's ModelService.HandleReloadConfigRequest as a client would."""

import os
import time

from google.protobuf import text_format
import grpc
import pytest
from tensorflow_serving.apis import (get_model_status_pb2, model_management_pb2,
                                     model_service_pb2_grpc)

from albert_tf import serving
from albert_tf.serving import server as server_lib
from tests.serving_toy_model import write_version

AVAILABLE, END = (get_model_status_pb2.ModelVersionStatus.AVAILABLE,
                  get_model_status_pb2.ModelVersionStatus.END)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A model with versions 1 and 2 (TF Serving's half_plus_two_2_versions)."""
    path = str(tmp_path_factory.mktemp("two_versions"))
    for version in (1, 2):
        write_version(path, version, offset=float(version))
    return path


def _config(base, name="m", extra=""):
    return (f'model_config_list {{ config {{ name: "{name}" base_path: "{base}" '
            f'model_platform: "tensorflow" '
            f'model_version_policy {{ specific {{ versions: 1 versions: 2 }} }} {extra} }} }}')


class _Server:
    def __init__(self, tmp_path, text, **flags):
        config = tmp_path / "models.config"
        config.write_text(text)
        self.server = serving.start_python_server(serving.ServerOptions(
            rest_api_port=0, grpc_port=0, model_config_file=str(config), **flags))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.grpc.port}")
        self.stub = model_service_pb2_grpc.ModelServiceStub(self.channel)

    def reload(self, text):
        request = model_management_pb2.ReloadConfigRequest()
        text_format.Parse(text, request.config)
        return self.stub.HandleReloadConfigRequest(request, timeout=60)

    def refused(self, text, code):
        with pytest.raises(grpc.RpcError) as error:
            self.reload(text)
        assert error.value.code() == code, error.value.details()
        return error.value.details()

    def states(self, name="m"):
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = name
        return {s.version: s.state for s in self.stub.GetModelStatus(
            request, timeout=30).model_version_status}

    def close(self):
        self.channel.close()
        self.server.shutdown()


@pytest.fixture
def server(tmp_path, base):
    server = _Server(tmp_path, _config(base))
    yield server
    server.close()


def test_reload_config_unloads_models_and_keeps_their_versions_as_end(server, base):
    """server_core_test.cc ReloadConfigUnloadsModels, then
    ReloadConfigHandlesLoadingAPreviouslyUnloadedModel."""
    assert server.states() == {2: AVAILABLE, 1: AVAILABLE}
    assert server.reload("model_config_list {}").status.error_code == 0
    assert server.states() == {2: END, 1: END}
    server.reload(_config(base))
    assert server.states() == {2: AVAILABLE, 1: AVAILABLE}


def test_assign_label_to_unavailable_version(server, base):
    """server_core_test.cc AssignLabelToUnavailableVersion (and ModelSpecMultipleVersionsAvailable
    for labels on loaded versions)."""
    details = server.refused(_config(base, extra='version_labels { key: "nice try" value: 99 }'),
                             grpc.StatusCode.FAILED_PRECONDITION)
    assert details == ("Request to assign label to version 99 of model m, which is not currently "
                       "available for inference")
    server.reload(_config(base, extra='version_labels { key: "A" value: 1 } '
                                      'version_labels { key: "B" value: 2 }'))


def test_assign_labels_to_unavailable_versions_when_allowed(tmp_path, base):
    """server_core_test.cc AssignLabelToUnavailableVersionAllowed and
    AssignExistingLabelToUnavailableVersionDisallowed: with
    --allow_version_labels_for_unavailable_models a new label may name any version, an
    existing label may not move to one that is not available."""
    server = _Server(tmp_path, _config(base), allow_version_labels_for_unavailable_models=True)
    try:
        server.reload(_config(base, extra='version_labels { key: "nice try" value: 99 }'))
        server.reload(_config(base, extra='version_labels { key: "A" value: 1 } '
                                          'version_labels { key: "B" value: 2 }'))
        details = server.refused(_config(base, extra='version_labels { key: "A" value: 99 }'),
                                 grpc.StatusCode.FAILED_PRECONDITION)
        assert "not currently available for inference" in details
    finally:
        server.close()


def test_labels_at_start_up_need_the_flag(tmp_path, base):
    """serving_config.md, and server_core.cc UpdateModelVersionLabelMap running before the
    first load: labels in the start-up config name versions not yet available, refused
    without --allow_version_labels_for_unavailable_models (one line naming file and model)."""
    config = tmp_path / "models.config"
    config.write_text(_config(base, extra='version_labels { key: "stable" value: 1 }'))
    with pytest.raises(server_lib.StartupError) as error:
        serving.start_python_server(serving.ServerOptions(
            rest_api_port=0, grpc_port=0, model_config_file=str(config)))
    assert str(error.value) == (f"--model_config_file={config}: Request to assign label to "
                                f"version 1 of model m, which is not currently available for "
                                f"inference")


@pytest.mark.parametrize("text, message", [
    # RelativePathsServerCoreTest RelativePathFails
    ('model_config_list { config { name: "r" base_path: "two_versions" } }',
     "Expected model r to have an absolute path or URI; got base_path()=two_versions"),
    # DuplicateModelNameInConfig
    ('model_config_list { config { name: "m" base_path: "/a" } config { name: "m" base_path: "/b" } }',
     "Illegal to list model m multiple times in config list"),
])
def test_invalid_configs_are_invalid_arguments(server, text, message):
    """server_core_test.cc, the test named on each case (ValidateModelConfigList's texts)."""
    assert message in server.refused(text, grpc.StatusCode.INVALID_ARGUMENT)
    assert server.states() == {2: AVAILABLE, 1: AVAILABLE}  # nothing changed


def test_mixed_absolute_and_relative_paths_fail(server, base):
    """server_core_test.cc MixedAbsoluteRelativeFails."""
    text = (f'model_config_list {{ config {{ name: "m" base_path: "{base}" }} '
            f'config {{ name: "r" base_path: "{os.path.basename(base)}" }} }}')
    server.refused(text, grpc.StatusCode.INVALID_ARGUMENT)


def test_a_reload_that_cannot_load_answers_at_once(server, tmp_path, base):
    """A missing base path (file_system_storage_path_source.cc: "Could not find base path")
    and a corrupt model (server_core.cc WaitUntilModelsAvailable: "did not become available",
    as server_core_test.cc ErroringModel) answer at once, not after the 5 x 60 s load retries
    of a start-up; the models served before stay served."""
    started = time.monotonic()
    details = server.refused(_config(str(tmp_path / "missing"), name="n"),
                             grpc.StatusCode.INVALID_ARGUMENT)
    assert details == f"Could not find base path {tmp_path / 'missing'} for servable n"
    corrupt = tmp_path / "corrupt"
    (corrupt / "1").mkdir(parents=True)
    (corrupt / "1" / "saved_model.pb").write_bytes(b"not a SavedModel")
    details = server.refused(f'model_config_list {{ config {{ name: "m" base_path: "{base}" '
                             f'model_version_policy {{ specific {{ versions: 1 versions: 2 }} }} }} '
                             f'config {{ name: "c" base_path: "{corrupt}" }} }}',
                             grpc.StatusCode.UNKNOWN)
    assert details.startswith("1 model(s) did not become available: {{name: c version: 1} "
                              "due to error: ")
    assert time.monotonic() - started < 30
    assert server.states() == {2: AVAILABLE, 1: AVAILABLE}
