"""Start-up and lifecycle edges of the built-in server: every start-up error is one line that
names the port, file, model or version (exit 2 from serve.py), before a model loads where it
can; version directories are read as TF Serving reads them (safe_strto64)."""

import os
import select
import shutil
import signal
import socket
import tempfile
import time

import grpc
import pytest
from tensorflow_serving.apis import get_model_status_pb2, model_service_pb2_grpc

from albert_tf import errors, serving
from albert_tf.export import warmup_requests
from albert_tf.serving import server as server_lib
from tests.conftest import run_python
from tests.serving_toy_model import write_version


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("one_version"))
    write_version(path, 1)
    return path


@pytest.fixture
def taken_port():
    """A port some other program listens on."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


def test_equal_ports_are_refused_before_loading(tmp_path):
    started = time.monotonic()
    with pytest.raises(server_lib.StartupError, match=r"^--port=8123 and --rest_api_port=8123: "
                       r"the gRPC and REST APIs need different ports$"):
        serving.start_python_server(serving.ServerOptions(
            model_base_path=str(tmp_path / "never_read"), model_name="m", rest_api_port=8123,
            grpc_port=8123))
    assert time.monotonic() - started < 1


def test_a_rest_port_in_use_is_named(base, taken_port):
    with pytest.raises(server_lib.StartupError) as error:
        serving.start_python_server(serving.ServerOptions(
            model_base_path=base, model_name="m", rest_api_port=taken_port))
    assert str(error.value) == (f"--rest_api_port={taken_port}: the REST server cannot listen on "
                                f"127.0.0.1:{taken_port}: Address already in use")


def test_a_grpc_port_in_use_is_named(base, taken_port):
    with pytest.raises(errors.UserInputError, match=rf"^--port={taken_port}: the gRPC server "
                       rf"cannot listen on 127.0.0.1:{taken_port} "):
        serving.start_python_server(serving.ServerOptions(
            model_base_path=base, model_name="m", rest_api_port=0, grpc_port=taken_port))


def test_a_missing_model_config_file_is_named(tmp_path):
    with pytest.raises(errors.MissingFileError,
                       match=rf"^--model_config_file={tmp_path}/none.config: no such file$"):
        serving.start_python_server(serving.ServerOptions(
            rest_api_port=0, model_config_file=str(tmp_path / "none.config")))


def test_a_model_config_file_that_is_a_directory_is_named(tmp_path):
    with pytest.raises(errors.UserInputError) as error:
        serving.start_python_server(serving.ServerOptions(
            model_name=None, rest_api_port=0, model_config_file=str(tmp_path)))
    assert str(error.value) == (f"--model_config_file={tmp_path}: is a directory, not a "
                                f"text-format ModelServerConfig file")


def test_a_specific_policy_whose_versions_are_missing_names_them(tmp_path, base):
    config = tmp_path / "models.config"
    config.write_text(f'model_config_list {{ config {{ name: "m" base_path: "{base}" '
                      f'model_version_policy {{ specific {{ versions: 3 }} }} }} }}')
    with pytest.raises(server_lib.StartupError) as error:
        serving.start_python_server(serving.ServerOptions(
            rest_api_port=0, model_config_file=str(config)))
    assert str(error.value) == (f"--model_config_file={config}: model m: no version under "
                                f"{base} matches its version policy (specific versions [3]; "
                                f"versions on disk: [1])")


def test_a_corrupt_warmup_file_names_file_and_version_without_retrying(tmp_path):
    """The only version's warm-up file is not a TFRecord: the start-up fails at once (not
    after TF Serving's 5 retries a minute apart) and says which file of which version."""
    path = write_version(str(tmp_path), 4)
    warmup_file = os.path.join(path, warmup_requests.WARMUP_FILE)
    os.makedirs(os.path.dirname(warmup_file))
    with open(warmup_file, "wb") as writer:
        writer.write(b"this is not a TFRecord file at all")
    started = time.monotonic()
    with pytest.raises(server_lib.StartupError) as error:
        serving.start_python_server(serving.ServerOptions(
            model_base_path=str(tmp_path), model_name="m", rest_api_port=0))
    assert time.monotonic() - started < 30
    message = str(error.value)
    assert message.startswith(f"--model_base_path={tmp_path}: 1 model(s) did not become "
                              f"available: {{{{name: m version: 4}} due to error: WarmupError: "
                              f"{warmup_file} (version 4 of model m): warm-up record 1 failed: ")
    assert "\n" not in message


def test_version_directories_read_as_tf_serving_reads_them(tmp_path, base):
    """`0005` is version 5 (TF Serving parses directory names with safe_strto64); a name beyond
    int64 is not a version and does not break GetModelStatus."""
    shutil.copytree(os.path.join(base, "1"), tmp_path / "0005")
    shutil.copytree(os.path.join(base, "1"), tmp_path / "99999999999999999999")
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=str(tmp_path), model_name="m", rest_api_port=0, grpc_port=0))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}")
    try:
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = "m"
        status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
            request, timeout=30).model_version_status
        assert [(s.version, s.state) for s in status] == [
            (5, get_model_status_pb2.ModelVersionStatus.AVAILABLE)]
    finally:
        channel.close()
        server.shutdown()


@pytest.mark.slow
def test_serve_py_start_up_errors_are_one_line_and_exit_2(tmp_path):
    result = run_python(["serve.py", f"--model_base_path={tmp_path}", "--use_model_server=false",
                         "--port=8123", "--rest_api_port=8123"], check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].endswith("--port=8123 and --rest_api_port=8123: the gRPC and REST APIs "
                              "need different ports")
    assert "Traceback" not in result.stderr


def _as_another_user(function):
    """`type: message` of what `function()` raises ('' if nothing) in a forked child that has
    dropped root (uid 65534), so that permissions apply: root, who runs the tests here, may
    read every file. Run in-process when the tests do not run as root."""
    if os.geteuid() != 0:
        try:
            function()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return ""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and exits
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                function()
                text = ""
            except Exception as error:
                text = f"{type(error).__name__}: {error}"
            os.write(write, text.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as reader:
        ready, _, _ = select.select([reader], [], [], 120)
        text = reader.read() if ready else "the child did not answer within 120 s"
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return text


@pytest.fixture
def open_base():
    """A base path with one version that any user may read (pytest's folders are root's only)."""
    path = tempfile.mkdtemp(prefix="open_base")
    os.chmod(path, 0o755)
    write_version(path, 1)
    yield path
    for root, folders, _ in os.walk(path):
        for folder in folders:
            os.chmod(os.path.join(root, folder), 0o755)
    shutil.rmtree(path)


@pytest.mark.parametrize("unreadable, message", [
    ("", "StartupError: --model_base_path={base}: {base}: permission denied: this server's "
         "user (uid {uid}) may not read the base path of servable m"),
    ("1", "StartupError: --model_base_path={base}: 1 model(s) did not become available: "
          "{{{{name: m version: 1}} due to error: PermissionError: {base}/1: permission denied: "
          "this server's user (uid {uid}) may not read the version's files}}"),
    ("1/variables", "StartupError: --model_base_path={base}: 1 model(s) did not become "
                    "available: {{{{name: m version: 1}} due to error: PermissionError: "
                    "{base}/1/variables: permission denied: this server's user (uid {uid}) may "
                    "not read the version's files}}"),
])
def test_unreadable_model_folders_are_named(open_base, unreadable, message):
    os.chmod(os.path.join(open_base, unreadable), 0)
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    options = serving.ServerOptions(model_base_path=open_base, model_name="m", rest_api_port=0,
                                    max_num_load_retries=0)
    assert _as_another_user(lambda: serving.start_python_server(options)) == message.format(
        base=open_base, uid=uid)


def test_unreadable_start_up_files_are_named_before_any_model_loads(open_base):
    """An unreadable --model_config_file or --ssl_config_file, or a config's second base path
    that cannot be read: one line, before the first model loads."""
    other = os.path.join(open_base, "other")
    os.makedirs(other, mode=0o755)
    config = os.path.join(open_base, "models.config")
    with open(config, "w") as writer:
        writer.write(f'model_config_list {{ config {{ name: "m" base_path: "{open_base}" }} '
                     f'config {{ name: "other" base_path: "{other}" }} }}')
    os.chmod(config, 0o644)
    os.chmod(other, 0)
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    denied = f"permission denied: this server's user (uid {uid}) may not read the"
    assert _as_another_user(lambda: serving.start_python_server(serving.ServerOptions(
        model_name=None, rest_api_port=0, model_config_file=config, max_num_load_retries=0))) == (
        f"StartupError: --model_config_file={config}: {other}: {denied} base path of servable "
        f"other")
    os.chmod(config, 0)
    assert _as_another_user(lambda: serving.start_python_server(serving.ServerOptions(
        model_name=None, rest_api_port=0, model_config_file=config))) == (
        f"ModelConfigError: --model_config_file={config}: {config}: {denied} file")
    ssl_config = os.path.join(open_base, "ssl.config")
    with open(ssl_config, "w") as writer:
        writer.write("server_key: 'k'")
    os.chmod(ssl_config, 0)
    assert _as_another_user(lambda: serving.start_python_server(serving.ServerOptions(
        model_base_path=open_base, model_name="m", rest_api_port=0, grpc_port=0,
        ssl_config_file=ssl_config))) == (
        f"UserInputError: --ssl_config_file={ssl_config}: {ssl_config}: {denied} file")
