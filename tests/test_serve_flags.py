"""serve.py's TF Serving flags: --model_base_path (or --export_dir), --batching_parameters_file,
and the tensorflow_model_server command line they become."""

from absl import flags
import pytest

from albert_tf import errors, serving
from albert_tf.scripts import serve


def _flags(*argv):
    flag_values = flags.FlagValues()
    serve.define_flags(flag_values)
    flag_values(["serve.py", *argv])
    return flag_values


def test_the_export_is_named_once():
    assert serve.base_path(_flags("--model_base_path=/m")) == "/m"
    assert serve.base_path(_flags("--export_dir=/m")) == "/m"
    for argv in ([], ["--model_base_path=/a", "--export_dir=/b"]):
        with pytest.raises(errors.UserInputError, match="--model_base_path"):
            serve.base_path(_flags(*argv))


def test_batching_flags(tmp_path):
    assert serve.batching_parameters(_flags()) is None
    assert serve.batching_parameters(_flags("--enable_batching")).max_batch_size == 1000
    path = tmp_path / "batching.txt"
    path.write_text("max_batch_size { value: 8 }\nnum_batch_threads { value: 2 }\n")
    parameters = serve.batching_parameters(_flags(f"--batching_parameters_file={path}"))
    assert (parameters.max_batch_size, parameters.num_batch_threads) == (8, 2)
    path.write_text("max_batch_size { value: 8 }\nbatch_size: 3\n")
    with pytest.raises(errors.UserInputError, match=rf"{path}: Error parsing .* 2:1 : .*batch_size"):
        serve.batching_parameters(_flags(f"--batching_parameters_file={path}"))
    with pytest.raises(errors.MissingFileError, match="no_such"):
        serve.batching_parameters(_flags(f"--batching_parameters_file={tmp_path}/no_such"))


def test_tensorflow_model_server_gets_the_same_flags(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/" + name)
    command = serving.model_server_command("/m", "albert", 8501, 8500, ["--enable_batching=true"])
    assert command == ["/usr/bin/tensorflow_model_server", "--rest_api_port=8501",
                       "--model_name=albert", "--model_base_path=/m", "--port=8500",
                       "--enable_batching=true"]


def test_prefer_tflite_model_reaches_both_servers(monkeypatch):
    """--prefer_tflite_model goes to tensorflow_model_server's command line, or to the built-in
    server's version loader."""
    import types
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/" + name)
    commands, calls = [], []
    monkeypatch.setattr(serving, "run_model_server", commands.append)
    serve.run(_flags("--model_base_path=/m", "--prefer_tflite_model"))
    assert "--prefer_tflite_model=true" in commands[0]
    serve.run(_flags("--model_base_path=/m"))
    assert not any("tflite" in flag for flag in commands[1])

    def start(options):
        calls.append(options)
        return types.SimpleNamespace(server_address=("127.0.0.1", 1),
                                     grpc=types.SimpleNamespace(port=2),
                                     serve_until_signalled=lambda: None)
    monkeypatch.setattr(serving, "start_python_server", start)
    serve.run(_flags("--model_base_path=/m", "--prefer_tflite_model", "--nouse_model_server"))
    assert calls[0].prefer_tflite_model is True


def test_text_b_help_says_a_single_sentence_model_cannot_be_told():
    """An export records no "pair task" fact, so serve.py cannot refuse --text_b for SST-2 or
    CoLA; its help says so instead of letting the answer pass as meaningful."""
    flag_values = flags.FlagValues()
    serve.define_flags(flag_values)
    assert "single-sentence" in flag_values["text_b"].help
    assert "never saw" in flag_values["text_b"].help
