"""TF Serving's ServerCore: the one owner of the served models, deciding for the REST and gRPC
front ends alike which loaded version answers a request (model name, version or version label)
and what a status request lists, in TF Serving's words. A single --model_name/--model_base_path
is a one-entry model config (TF Serving's BuildSingleModelConfig), served as a
--model_config_file is (`model_config.ConfiguredModels`, each model a `versions.ServedVersions`
of servables built batched and warmed up as they load)."""

import os

from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.config import model_server_config_pb2

from albert_tf import errors
from albert_tf.serving import batching, model_config, tflite_servable, warmup
from albert_tf.serving import versions as versions_lib
from albert_tf.serving.errors import Code, ServingError
from albert_tf.serving.model_runner import ModelRunner


class StartupError(errors.UserInputError):
    """The server cannot start: a port, file, model or version it was given is unusable (one
    line, exit 2, naming it)."""


def version_loader(options):
    """The `ServedVersions` loader of `options` (a `ServerOptions`): a `ModelRunner` (its
    `model.tflite`'s with `prefer_tflite_model`, `tflite_servable`), wrapped in a
    `batching.BatchingServable` when batching is on, and warmed up from its `assets.extra`
    before it is served."""
    make_runner = tflite_servable.load_runner if options.prefer_tflite_model else ModelRunner

    def load(model_dir, model_name, version, max_batch_size):
        runner = make_runner(model_dir, model_name, version, max_batch_size)
        if options.batching_parameters is not None:
            runner = batching.BatchingServable(runner, options.batching_parameters)
        if options.enable_model_warmup:
            warmup.replay(runner)
        return runner
    return load


def single_model_config(name, base_path, num_versions):
    """TF Serving's BuildSingleModelConfig: one model, the latest `num_versions` versions, its
    base path made absolute (a model config needs absolute paths)."""
    config = model_server_config_pb2.ModelServerConfig()
    model = config.model_config_list.config.add()
    model.name, model.base_path = name, os.path.abspath(base_path)
    model.model_platform = "tensorflow"
    model.model_version_policy.latest.num_versions = num_versions
    return config


class ServerCore:
    """The models of `options` (a `ServerOptions`), loaded at construction; a model that
    cannot be served raises a `StartupError` naming the flag, model and versions."""

    def __init__(self, options):
        loader = version_loader(options)

        def make_versions(name, base_path, policy, labels, retry_first_load):
            return versions_lib.ServedVersions(
                base_path, name, options.max_batch_size, policy=policy, labels=labels,
                max_num_load_retries=options.max_num_load_retries,
                retry_interval_secs=options.load_retry_interval_secs, loader=loader,
                retry_first_load=retry_first_load)

        self.from_file = options.model_config_file is not None
        if self.from_file:
            flag, config = f"--model_config_file={options.model_config_file}", None
        else:
            flag = f"--model_base_path={options.model_base_path}"
            config = single_model_config(options.model_name, options.model_base_path,
                                         options.num_versions)
        try:
            self._models = model_config.ConfiguredModels(
                options.model_config_file or flag, make_versions,
                options.file_system_poll_wait_seconds,
                options.allow_version_labels_for_unavailable_models, config=config)
        except ServingError as error:
            raise StartupError(f"{flag}: {error}") from error
        if self.from_file:
            self._models.start_polling(options.model_config_file_poll_wait_seconds)

    def servable(self, name, version=None, label=None):
        """The runner of model `name`'s `version`, or its version `label`, or its latest
        version (ServerCore's ServableRequestFromModelSpec and the manager's lookup)."""
        if not name:
            raise ServingError("ModelSpec has no name specified.")
        versions = self._models.models.get(name)
        if label is not None:
            if versions is None or label not in versions.labels:
                raise ServingError(f"Unrecognized servable version label: {label}")
            version = versions.labels[label]
        runner = versions.get(version) if versions is not None else None
        if runner is None:
            request = f"Latest({name})" if version is None else f"Specific({name}, {version})"
            raise ServingError(f"Servable not found for request: {request}", code=Code.NOT_FOUND)
        return runner

    def servable_for(self, spec):
        """The runner a gRPC ModelSpec names."""
        choice = spec.WhichOneof("version_choice")
        return self.servable(spec.name, spec.version.value if choice == "version" else None,
                             spec.version_label if choice == "version_label" else None)

    def status(self, name, version=None):
        """GetModelStatus: the GetModelStatusResponse of every version of model `name` (a
        version label is not asked for: every version is listed), or of `version` only; a
        model a reload removed still lists its versions (END), as TF Serving's servable state
        monitor keeps them."""
        versions = self._models.models.get(name) or self._models.retired.get(name)
        entries = [] if versions is None else [
            entry for entry in versions.status().model_version_status
            if version is None or entry.version == version]
        if not entries:
            raise ServingError(f"Could not find any versions of model {name}" if version is None
                               else f"Could not find version {version} of model {name}",
                               code=Code.NOT_FOUND)
        return get_model_status_pb2.GetModelStatusResponse(model_version_status=entries)

    def reload(self, config):
        """HandleReloadConfigRequest: serve the models of a `ModelServerConfig` proto."""
        if not self.from_file:
            raise ServingError(
                "HandleReloadConfigRequest needs a server started with --model_config_file "
                "(this one serves --model_name/--model_base_path)", code=Code.FAILED_PRECONDITION)
        try:
            wanted = model_config.models_of(config, "HandleReloadConfigRequest")
        except model_config.ModelConfigError as error:
            raise ServingError(str(error)) from error
        self._models.apply(wanted)

    def stop(self):
        """Stops rescanning the model config and the version directories."""
        self._models.stop_polling()
