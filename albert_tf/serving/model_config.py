"""TF Serving's `--model_config_file`: a text-format `ModelServerConfig` (tensorflow-serving-api's
proto) naming several models, each with a base path, a `model_version_policy` (latest N, all,
specific) and `version_labels`; reread every `--model_config_file_poll_wait_seconds` so models
can be added, removed or re-labelled without a restart. gRPC's `HandleReloadConfigRequest`
applies a `ModelServerConfig` sent by a client the same way (until the file changes again)."""

import os
import threading

from absl import logging
from google.protobuf import text_format
import tensorflow as tf
from tensorflow_serving.config import model_server_config_pb2

from albert_tf import errors
from albert_tf.serving import preload_checks, versions as versions_lib
from albert_tf.serving.errors import Code, ServingError

class ModelConfigError(errors.UserInputError):
    """A model config file TF Serving would refuse; the message names the file and model."""


def read_config(path):
    """The `ModelServerConfig` proto of the text-format file at `path` (TF Serving's
    ParseProtoTextFile, with protobuf's own error text)."""
    if not tf.io.gfile.exists(path):
        raise errors.MissingFileError(f"--model_config_file={path}: no such file")
    if tf.io.gfile.isdir(path):
        raise ModelConfigError(f"--model_config_file={path}: is a directory, not a text-format "
                               f"ModelServerConfig file")
    if preload_checks.unreadable(path):
        raise ModelConfigError(f"--model_config_file={path}: "
                               f"{preload_checks.permission_denied(path, 'file')}")
    try:
        with tf.io.gfile.GFile(path) as reader:
            return text_format.Parse(reader.read(), model_server_config_pb2.ModelServerConfig())
    except (text_format.ParseError, UnicodeDecodeError) as error:
        raise ModelConfigError(f"{path}: Error parsing text-format "
                               f"tensorflow.serving.ModelServerConfig: {error}") from error


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
        if not model.name:
            raise ModelConfigError(f"{where}: every config needs a name")
        if model.name in names:
            raise ModelConfigError(f"{path}: Illegal to list model {model.name} multiple times "
                                   f"in config list")
        if preload_checks.is_local(model.base_path) and not os.path.isabs(model.base_path):
            raise ModelConfigError(f"{path}: Expected model {model.name} to have an absolute "
                                   f"path or URI; got base_path()={model.base_path}")
        if model.model_platform not in ("", "tensorflow"):
            raise ModelConfigError(f"{where}: model_platform {model.model_platform!r}; only "
                                   f"'tensorflow' is served")
        names.add(model.name)
        policy = model.model_version_policy
        try:  # TF Serving's default policy: latest 1
            version_policy = versions_lib.VersionPolicy(
                policy.WhichOneof("policy_choice") or "latest", policy.latest.num_versions or 1,
                policy.specific.versions)
        except ValueError as error:
            raise ModelConfigError(f"{where}: {error}") from error
        models.append((model.name, model.base_path, version_policy, dict(model.version_labels)))
    return models


class ConfiguredModels:
    """{name: ServedVersions} kept as the config file says. `models` is the live dict the REST
    and gRPC front ends read, `retired` the models a reload removed (their versions listed as
    END by the status call, as TF Serving's state monitor keeps them); `config`, a
    ModelServerConfig proto, is served instead of the file's;
    `make_versions(name, base_path, policy, labels, retry_first_load)` loads a model. Labels
    may name only AVAILABLE versions unless `allow_unavailable_labels`
    (--allow_version_labels_for_unavailable_models), and even then not move an existing label
    to a version that is not AVAILABLE."""

    def __init__(self, path, make_versions, poll_secs=versions_lib.DEFAULT_POLL_SECS,
                 allow_unavailable_labels=False, config=None):
        self.path, self._make_versions, self._poll_secs = path, make_versions, poll_secs
        self.allow_unavailable_labels = allow_unavailable_labels
        self.models, self.retired, self._base_paths = {}, {}, {}
        self._stop = threading.Event()
        self._applying = threading.Lock()
        self._file_config = None
        self._first = True
        if config is None:
            self.reload()
        else:  # a config made in memory (one --model_base_path), named `path` in errors
            self.apply(models_of(config, path))

    def reload(self):
        """Applies the file (see `apply`) if it changed since it was last applied, so that a
        config sent with HandleReloadConfigRequest stays until the file itself changes."""
        config = read_config(self.path)
        if config != self._file_config:
            self.apply(models_of(config, self.path))
            self._file_config = config

    def apply(self, wanted):
        """Serves the models `wanted` ([(name, base_path, policy, labels)], as `parse` gives):
        new models are loaded, removed ones retired, policies and labels of the others updated
        in place (their versions follow at the next rescan). ServingErrors with TF Serving's
        codes and texts: FAILED_PRECONDITION for a label on a version not available,
        INVALID_ARGUMENT for a base path that does not exist, UNKNOWN for a new model none of
        whose versions loads (answered at once: after the start-up, a reload does not wait
        for load retries)."""
        with self._applying:  # the file poll and a gRPC HandleReloadConfigRequest may race
            self._check_labels(wanted)
            for name, base_path, *_ in wanted:
                if not tf.io.gfile.isdir(base_path):
                    raise ServingError(f"Could not find base path {base_path} for servable "
                                       f"{name}", code=Code.INVALID_ARGUMENT)
                if preload_checks.unreadable(base_path):  # before any model of the file loads
                    raise ServingError(preload_checks.permission_denied(
                        base_path, f"base path of servable {name}"), code=Code.INVALID_ARGUMENT)
            self._apply(wanted)
            self._first = False

    def _check_labels(self, wanted):
        for name, base_path, _, labels in wanted:
            current = self.models.get(name)
            if current is not None and self._base_paths[name] != base_path:
                current = None  # a new base path: its versions are not loaded yet
            available = current.available() if current is not None else set()
            for label, version in labels.items():
                existing = current.labels.get(label) if current is not None else None
                allowed = self.allow_unavailable_labels and existing in (None, version)
                if version not in available and not allowed:
                    raise ServingError(
                        f"Request to assign label to version {version} of model {name}, which "
                        f"is not currently available for inference", code=Code.FAILED_PRECONDITION)

    def _apply(self, wanted):
        for name, base_path, policy, labels in wanted:
            current = self.models.get(name)
            if current is not None and self._base_paths[name] == base_path:
                current.policy, current.labels = policy, labels
                continue
            versions = self._make_versions(name, base_path, policy, labels,
                                           retry_first_load=self._first)
            versions.start_polling(self._poll_secs)
            if current is not None:
                current.stop_polling()
            self.models[name], self._base_paths[name] = versions, base_path
            self.retired.pop(name, None)
            logging.info("serving model %s from %s", name, base_path)
        for name in set(self.models) - {name for name, *_ in wanted}:
            self.retired[name] = self.models.pop(name)
            self.retired[name].retire()
            del self._base_paths[name]
            logging.info("model %s removed from %s", name, self.path)

    def start_polling(self, poll_secs):
        """Rereads the file every `poll_secs` (TF Serving's --model_config_file_poll_wait_seconds;
        0: never); a file that no longer parses is logged and the models stay as they are."""
        if poll_secs <= 0:
            return
        def poll():
            refused = None
            while not self._stop.wait(poll_secs):
                try:
                    self.reload()
                    refused = None
                except Exception as error:  # logged once per different refusal, one line
                    if str(error) != refused:
                        logging.warning("%s: config reload refused, the models stay as they "
                                        "are: %s: %s", self.path, type(error).__name__,
                                        str(error).replace("\n", " "))
                    refused = str(error)
        threading.Thread(target=poll, daemon=True, name="model-config-poll").start()

    def stop_polling(self):
        self._stop.set()
        for versions in self.models.values():
            versions.stop_polling()
