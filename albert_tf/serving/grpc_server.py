"""TF Serving's gRPC API (its `PredictionService` and `ModelService`, from the
tensorflow-serving-api protos) on grpcio, next to the REST API: a stock
`prediction_service_pb2_grpc.PredictionServiceStub` client works unchanged."""

from concurrent import futures

from absl import logging
from google.protobuf import json_format
import grpc
from tensorflow_serving.apis import (get_model_status_pb2, model_service_pb2_grpc,
                                     prediction_service_pb2_grpc)

from albert_tf.serving import tensor_requests
from albert_tf.serving.errors import ServingError

DEFAULT_GRPC_PORT = 8500
DEFAULT_MAX_CONCURRENT_RPCS = 1024
# ServingError's HTTP codes as the gRPC codes TF Serving answers for the same causes.
_GRPC_CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 404: grpc.StatusCode.NOT_FOUND,
               408: grpc.StatusCode.DEADLINE_EXCEEDED, 413: grpc.StatusCode.RESOURCE_EXHAUSTED,
               429: grpc.StatusCode.RESOURCE_EXHAUSTED, 500: grpc.StatusCode.INTERNAL,
               501: grpc.StatusCode.UNIMPLEMENTED, 503: grpc.StatusCode.UNAVAILABLE}


def grpc_code(error):
    """The gRPC status code of a ServingError."""
    return _GRPC_CODES.get(getattr(error, "status", 400), grpc.StatusCode.UNKNOWN)


def _answer(context, handler):
    """Runs `handler()`, turning a ServingError into its status code and message and any
    other exception into INTERNAL (logged: a bug of ours, the server stays up)."""
    try:
        return handler()
    except ServingError as error:
        context.abort(grpc_code(error), str(error))
    except Exception as error:
        logging.exception("gRPC request failed")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def served_versions(models, spec):
    """The `ServedVersions` of the model a ModelSpec names (NOT_FOUND as TF Serving)."""
    if spec.name not in models:
        raise ServingError(f"Servable not found for request: Latest({spec.name})", status=404)
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


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Predict, Classify, Regress, MultiInference and GetModelMetadata over `models`
    ({name: ServedVersions})."""

    def __init__(self, models):
        self.models = models

    def _call(self, context, request, function, spec=None):
        return _answer(context, lambda: function(
            runner_for(self.models, spec or request.model_spec), request))

    def Predict(self, request, context):
        return self._call(context, request, tensor_requests.predict)

    def Classify(self, request, context):
        return self._call(context, request, tensor_requests.classify)

    def Regress(self, request, context):
        return self._call(context, request, tensor_requests.regress)

    def MultiInference(self, request, context):
        if not request.tasks:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "MultiInferenceRequest has no tasks")
        return self._call(context, request, tensor_requests.multi_inference,
                          request.tasks[0].model_spec)

    def GetModelMetadata(self, request, context):
        return self._call(context, request, tensor_requests.metadata)


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """GetModelStatus: every version's state (START, LOADING, AVAILABLE, END) and error."""

    def __init__(self, models):
        self.models = models

    def GetModelStatus(self, request, context):
        def status():
            versions = served_versions(self.models, request.model_spec)
            spec = request.model_spec
            if spec.WhichOneof("version_choice") == "version_label":
                number = versions.get_label(spec.version_label).version
            elif spec.WhichOneof("version_choice") == "version":
                number = spec.version.value
            else:
                number = None
            return json_format.ParseDict(versions.status(number),
                                         get_model_status_pb2.GetModelStatusResponse())
        return _answer(context, status)


class GrpcServer:
    """grpcio server on host:port (0 = any free port; `port` is the bound one)."""

    def __init__(self, models, host, port, max_workers=64,
                 max_concurrent_rpcs=DEFAULT_MAX_CONCURRENT_RPCS):
        # Above max_concurrent_rpcs grpcio answers RESOURCE_EXHAUSTED at once: overload is
        # refused promptly instead of queued without bound.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers, thread_name_prefix="grpc"),
            maximum_concurrent_rpcs=max_concurrent_rpcs,
            options=[("grpc.max_receive_message_length", 64 << 20),
                     ("grpc.max_send_message_length", 64 << 20)])
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionService(models), self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(models),
                                                                  self._server)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise RuntimeError(f"the gRPC server could not bind {address}")
        self._server.start()

    def shutdown(self, grace_secs=5):
        self._server.stop(grace_secs).wait()
