"""TF Serving's `--model_config_file`: a text-format `ModelServerConfig` (tensorflow-serving-api's
proto) naming several models, each with a base path, a `model_version_policy` (latest N, all,
specific) and `version_labels`; reread every `--model_config_file_poll_wait_seconds` so models
can be added, removed or re-labelled without a restart. gRPC's `HandleReloadConfigRequest`
applies a `ModelServerConfig` sent by a client the same way (until the file changes again)."""

import threading

from absl import logging
from google.protobuf import text_format
import tensorflow as tf
from tensorflow_serving.config import model_server_config_pb2

from albert_tf import errors
from albert_tf.serving import versions as versions_lib


class ModelConfigError(errors.UserInputError):
    """A model config file TF Serving would refuse; the message names the file and model."""


def read_config(path):
    """The `ModelServerConfig` proto of the text-format file at `path`."""
    try:
        with tf.io.gfile.GFile(path) as reader:
            return text_format.Parse(reader.read(), model_server_config_pb2.ModelServerConfig())
    except text_format.ParseError as error:
        raise ModelConfigError(f"{path}: not a text-format ModelServerConfig: {error}") from error


def parse(path):
    """[(name, base_path, VersionPolicy, labels)] of the models in the file at `path`."""
    return models_of(read_config(path), path)


def models_of(config, path):
    """[(name, base_path, VersionPolicy, labels)] of a `ModelServerConfig` proto; `path` names
    where it came from in errors (the file, or the gRPC request that sent it)."""
    if config.WhichOneof("config") != "model_config_list":
        raise ModelConfigError(f"{path}: needs a model_config_list (custom_model_config is not "
                               f"supported)")
    models, names = [], set()
    for model in config.model_config_list.config:
        where = f"{path}: model {model.name!r}"
        if not model.name or not model.base_path:
            raise ModelConfigError(f"{where}: every config needs a name and a base_path")
        if model.name in names:
            raise ModelConfigError(f"{where}: named twice")
        if model.model_platform not in ("", "tensorflow"):
            raise ModelConfigError(f"{where}: model_platform {model.model_platform!r}; only "
                                   f"'tensorflow' is served")
        names.add(model.name)
        policy = model.model_version_policy
        kind = policy.WhichOneof("policy_choice") or "latest"
        try:
            if kind == "latest":
                num = policy.latest.num_versions or 1  # TF Serving's default policy: latest 1
                version_policy = versions_lib.VersionPolicy("latest", num)
            elif kind == "all":
                version_policy = versions_lib.VersionPolicy("all")
            else:
                version_policy = versions_lib.VersionPolicy("specific",
                                                            versions=policy.specific.versions)
        except ValueError as error:
            raise ModelConfigError(f"{where}: {error}") from error
        models.append((model.name, model.base_path, version_policy, dict(model.version_labels)))
    if not models:
        raise ModelConfigError(f"{path}: no model in model_config_list")
    return models


class ConfiguredModels:
    """{name: ServedVersions} kept as the config file says. `models` is the live dict the REST
    and gRPC front ends read; `make_versions(name, base_path, policy, labels)` loads a model."""

    def __init__(self, path, make_versions, poll_secs=versions_lib.DEFAULT_POLL_SECS):
        self.path, self._make_versions, self._poll_secs = path, make_versions, poll_secs
        self.models, self._base_paths = {}, {}
        self._stop = threading.Event()
        self._applying = threading.Lock()
        self._file_config = None
        self.reload()

    def reload(self):
        """Applies the file (see `apply`) if it changed since it was last applied, so that a
        config sent with HandleReloadConfigRequest stays until the file itself changes."""
        config = read_config(self.path)
        if config != self._file_config:
            self.apply(models_of(config, self.path))
            self._file_config = config

    def apply(self, wanted):
        """Serves the models `wanted` ([(name, base_path, policy, labels)], as `parse` gives):
        new models are loaded, removed ones dropped, policies and labels of the others updated
        in place (their versions follow at the next rescan)."""
        with self._applying:  # the file poll and a gRPC HandleReloadConfigRequest may race
            self._apply(wanted)

    def _apply(self, wanted):
        for name, base_path, policy, labels in wanted:
            current = self.models.get(name)
            if current is not None and self._base_paths[name] == base_path:
                current.policy, current.labels = policy, labels
                continue
            versions = self._make_versions(name, base_path, policy, labels)
            versions.start_polling(self._poll_secs)
            if current is not None:
                current.stop_polling()
            self.models[name], self._base_paths[name] = versions, base_path
            logging.info("serving model %s from %s", name, base_path)
        for name in set(self.models) - {name for name, *_ in wanted}:
            self.models.pop(name).stop_polling()
            del self._base_paths[name]
            logging.info("model %s removed from %s", name, self.path)

    def start_polling(self, poll_secs):
        """Rereads the file every `poll_secs` (TF Serving's --model_config_file_poll_wait_seconds;
        0: never); a file that no longer parses is logged and the models stay as they are."""
        if poll_secs <= 0:
            return
        def poll():
            while not self._stop.wait(poll_secs):
                try:
                    self.reload()
                except Exception:
                    logging.exception("%s: reloading the model config failed", self.path)
        threading.Thread(target=poll, daemon=True, name="model-config-poll").start()

    def stop_polling(self):
        self._stop.set()
        for versions in self.models.values():
            versions.stop_polling()
