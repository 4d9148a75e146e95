"""TF Serving's gRPC API (its `PredictionService` and `ModelService`, from the
tensorflow-serving-api protos) on grpcio, next to the REST API: a stock
`prediction_service_pb2_grpc.PredictionServiceStub` client works unchanged. The requests
go to the request core (`request_core`) as they come."""

from concurrent import futures
import time

from absl import logging
from google.protobuf import json_format
import grpc
from tensorflow_serving.apis import (get_model_status_pb2, model_management_pb2, model_pb2,
                                     model_service_pb2_grpc, prediction_service_pb2_grpc)

from albert_tf import errors
from albert_tf.serving import grpc_listen, model_config, request_core
from albert_tf.serving.errors import Code, ServingError

DEFAULT_GRPC_PORT = 8500
DEFAULT_MAX_CONCURRENT_RPCS = 1024
_GRPC_CODES = {code.value[0]: code for code in grpc.StatusCode}


def grpc_code(error):
    """The gRPC status code of a ServingError: its canonical code, as TF Serving answers."""
    return _GRPC_CODES.get(int(error.code), grpc.StatusCode.UNKNOWN)


def _answer(context, handler, record=None):
    """Runs `handler()`, turning a ServingError into its status code and message and any
    other exception into INTERNAL (logged: a bug of ours, the server stays up); then
    `record(code, seconds)` counts the answer in the metrics."""
    started, code = time.perf_counter(), Code.OK
    try:
        return handler()
    except ServingError as error:
        code = error.code
        context.abort(grpc_code(error), str(error))
    except Exception as error:
        code = Code.INTERNAL
        logging.exception("gRPC request failed")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
    finally:
        if record is not None:
            record(code, time.perf_counter() - started)


def served_versions(models, spec):
    """The `ServedVersions` of the model a ModelSpec names (ServerCore's
    ServableRequestFromModelSpec: INVALID_ARGUMENT without a name, NOT_FOUND for another)."""
    if not spec.name:
        raise ServingError("ModelSpec has no name specified.")
    if spec.name not in models:
        request = (f"Specific({spec.name}, {spec.version.value})"
                   if spec.WhichOneof("version_choice") == "version" else f"Latest({spec.name})")
        raise ServingError(f"Servable not found for request: {request}", code=Code.NOT_FOUND)
    return models[spec.name]


def runner_for(models, spec):
    """The runner a ModelSpec names: a version, a version label or the latest."""
    versions = served_versions(models, spec)
    choice = spec.WhichOneof("version_choice")
    if choice == "version":
        return versions.get(spec.version.value)
    if choice == "version_label":
        return versions.get_label(spec.version_label)
    return versions.get()


def require_model_spec(request):
    """TF Serving's first check of Predict, Classify, Regress, GetModelMetadata and
    GetModelStatus (predict_impl.cc and the others)."""
    if not request.HasField("model_spec"):
        raise ServingError("Missing ModelSpec")


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Predict, Classify, Regress, MultiInference and GetModelMetadata over `models`
    ({name: ServedVersions})."""

    def __init__(self, models, metrics):
        self.models, self.metrics = models, metrics

    def _call(self, context, request, function, api, check=require_model_spec):
        spec = request.model_spec

        def handle():
            check(request)
            return function(runner_for(self.models, spec), request)
        return _answer(context, handle, _recorder(self.metrics, spec.name, api))

    def Predict(self, request, context):
        return self._call(context, request, request_core.predict, "predict")

    def Classify(self, request, context):
        return self._call(context, request, request_core.classify, "classify")

    def Regress(self, request, context):
        return self._call(context, request, request_core.regress, "regress")

    def MultiInference(self, request, context):
        # TF Serving resolves the model of the first task's spec (multi_inference_helper.cc).
        spec = request.tasks[0].model_spec if request.tasks else model_pb2.ModelSpec()
        return _answer(context,
                       lambda: request_core.multi_inference(runner_for(self.models, spec),
                                                               request),
                       _recorder(self.metrics, spec.name, "multi_inference"))

    def GetModelMetadata(self, request, context):
        def check(request):
            require_model_spec(request)
            request_core.check_metadata_fields(request)
        return self._call(context, request, request_core.metadata, "metadata", check)


def _recorder(metrics, model_name, api):
    """What `_answer` calls to count a gRPC request in `metrics`, as TF Serving labels it."""
    def record(code, seconds):
        metrics.record(model_name, api, code, seconds, entrypoint="GRPC")
    return record


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """GetModelStatus: every version's state (START, LOADING, AVAILABLE, END) and error;
    HandleReloadConfigRequest: serve the models of a `ModelServerConfig` (with
    --model_config_file; `configured` is then its `model_config.ConfiguredModels`)."""

    def __init__(self, models, metrics, configured=None):
        self.models, self.metrics, self.configured = models, metrics, configured

    def HandleReloadConfigRequest(self, request, context):
        def reload():
            if self.configured is None:
                raise ServingError(
                    "HandleReloadConfigRequest needs a server started with --model_config_file "
                    "(this one serves --model_name/--model_base_path)", code=Code.FAILED_PRECONDITION)
            try:
                wanted = model_config.models_of(request.config, "HandleReloadConfigRequest")
            except model_config.ModelConfigError as error:
                raise ServingError(str(error)) from error
            self.configured.apply(wanted)
            return model_management_pb2.ReloadConfigResponse()  # status OK
        return _answer(context, reload, _recorder(self.metrics, "", "reload_config"))

    def GetModelStatus(self, request, context):
        """get_model_status_impl.cc: a version label is ignored (every version listed); a
        model a reload removed still lists its versions (END)."""
        def status():
            require_model_spec(request)
            spec = request.model_spec
            retired = self.configured.retired if self.configured is not None else {}
            versions = self.models.get(spec.name) or retired.get(spec.name)
            number = spec.version.value if spec.WhichOneof("version_choice") == "version" else None
            if versions is None:
                raise ServingError(f"Could not find any versions of model {spec.name}"
                                   if number is None else
                                   f"Could not find version {number} of model {spec.name}",
                                   code=Code.NOT_FOUND)
            return json_format.ParseDict(versions.status(number),
                                         get_model_status_pb2.GetModelStatusResponse())
        return _answer(context, status,
                       _recorder(self.metrics, request.model_spec.name, "status"))


class GrpcServer:
    """grpcio server on host:port (0 = any free port, None = no TCP port; `port` is the bound
    one) and/or the Unix socket `socket_path`, with `channel_arguments` ([(key, value)]) and
    `credentials` (None: insecure). A port or socket it cannot bind raises a UserInputError
    naming the flag."""

    def __init__(self, models, host, port, metrics, configured=None, max_workers=64,
                 max_concurrent_rpcs=DEFAULT_MAX_CONCURRENT_RPCS, channel_arguments=(),
                 socket_path=None, credentials=None):
        # Above max_concurrent_rpcs grpcio answers RESOURCE_EXHAUSTED at once: overload is
        # refused promptly instead of queued without bound. No SO_REUSEPORT: a port another
        # server holds is an error, not shared.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers, thread_name_prefix="grpc"),
            maximum_concurrent_rpcs=max_concurrent_rpcs,
            options=grpc_listen.server_options(channel_arguments))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionService(models, metrics), self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(
            ModelService(models, metrics, configured), self._server)
        self.port = None
        if port is not None:
            address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            self.port = self._bind(address, f"--port={port}", credentials)
        if socket_path is not None:
            self._bind(f"unix:{socket_path}", f"--grpc_socket_path={socket_path}", credentials)
        self._server.start()

    def _bind(self, address, flag, credentials):
        try:
            if credentials is None:
                bound = self._server.add_insecure_port(address)
            else:
                bound = self._server.add_secure_port(address, credentials)
        except RuntimeError:
            bound = 0
        if bound == 0:
            raise errors.UserInputError(f"{flag}: the gRPC server cannot listen on {address} "
                                        f"(in use, or not an address of this host)")
        return bound

    def shutdown(self, grace_secs=5):
        self._server.stop(grace_secs).wait()
