"""TF Serving's gRPC API (its `PredictionService` and `ModelService`, from the
tensorflow-serving-api protos) on grpcio, next to the REST API: a stock
`prediction_service_pb2_grpc.PredictionServiceStub` client works unchanged. The requests
go to the request core (`request_core`) with the version the server core (`server_core`)
resolves for their ModelSpec."""

from concurrent import futures
import time

from absl import logging
import grpc
from tensorflow_serving.apis import (model_management_pb2, model_pb2, model_service_pb2_grpc,
                                     prediction_service_pb2_grpc)

from albert_tf import errors
from albert_tf.serving import grpc_listen, request_core
from albert_tf.serving.errors import Code, ServingError

DEFAULT_MAX_CONCURRENT_RPCS = 1024


def _answer(context, handler, metrics, model_name, api):
    """Runs `handler()`, turning a ServingError into its status code and message and any
    other exception into INTERNAL (logged: a bug of ours, the server stays up); then counts
    the answer in `metrics`, labelled as TF Serving labels it."""
    started, code = time.perf_counter(), Code.OK
    try:
        return handler()
    except ServingError as error:
        code = error.code
        context.abort(grpc.StatusCode[error.code.name], str(error))  # the same code
    except Exception as error:
        code = Code.INTERNAL
        logging.exception("gRPC request failed")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
    finally:
        metrics.record(model_name, api, code, time.perf_counter() - started, entrypoint="GRPC")


def require_model_spec(request):
    """TF Serving's first check of Predict, Classify, Regress, GetModelMetadata and
    GetModelStatus (predict_impl.cc and the others)."""
    if not request.HasField("model_spec"):
        raise ServingError("Missing ModelSpec")


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Predict, Classify, Regress, MultiInference and GetModelMetadata over a
    `server_core.ServerCore`."""

    def __init__(self, core, metrics):
        self.core, self.metrics = core, metrics

    def _call(self, context, request, function, api, *checks):
        """`function(servable, request)` after the ModelSpec's check and `checks`, as TF Serving."""
        spec = request.model_spec

        def handle():
            for check in (require_model_spec, *checks):
                check(request)
            return function(self.core.servable_for(spec), request)
        return _answer(context, handle, self.metrics, spec.name, api)

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
                       lambda: request_core.multi_inference(self.core.servable_for(spec), request),
                       self.metrics, spec.name, "multi_inference")

    def GetModelMetadata(self, request, context):
        return self._call(context, request, request_core.metadata, "metadata",
                          request_core.check_metadata_fields)


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """GetModelStatus: every version's state (START, LOADING, AVAILABLE, END) and error;
    HandleReloadConfigRequest: serve the models of a `ModelServerConfig`."""

    def __init__(self, core, metrics):
        self.core, self.metrics = core, metrics

    def HandleReloadConfigRequest(self, request, context):
        def reload():
            self.core.reload(request.config)
            return model_management_pb2.ReloadConfigResponse()  # status OK
        return _answer(context, reload, self.metrics, "", "reload_config")

    def GetModelStatus(self, request, context):
        """get_model_status_impl.cc: a version label is ignored (every version listed)."""
        def status():
            require_model_spec(request)
            spec = request.model_spec
            number = spec.version.value if spec.WhichOneof("version_choice") == "version" else None
            return self.core.status(spec.name, number)
        return _answer(context, status, self.metrics, request.model_spec.name, "status")


class ReceiveLimit(grpc.ServerInterceptor):
    """Refuses a request larger than `limit` bytes (-1: none) with grpcio's RESOURCE_EXHAUSTED
    text plus the flag that raises the limit (TF Serving accepts up to 2 GiB)."""

    def __init__(self, limit):
        self.limit = limit

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None or self.limit < 0:
            return handler
        deserialize, behaviour, limit = handler.request_deserializer, handler.unary_unary, self.limit

        def checked(raw, context):
            if len(raw) > limit:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, (
                    f"Received message larger than max ({len(raw)} vs. {limit}); raise it with "
                    f"--grpc_channel_arguments={grpc_listen.RECEIVE_LIMIT}=<bytes> (up to "
                    f"2147483647)"))
            return behaviour(deserialize(raw) if deserialize else raw, context)
        return grpc.unary_unary_rpc_method_handler(
            checked, response_serializer=handler.response_serializer)


class GrpcServer:
    """grpcio server on host:port (0 = any free port, None = no TCP port; `port` is the bound
    one) and/or the Unix socket `socket_path`, with `channel_arguments` ([(key, value)]) and
    `credentials` (None: insecure). A port or socket it cannot bind raises a UserInputError
    naming the flag."""

    def __init__(self, core, host, port, metrics, max_workers=64,
                 max_concurrent_rpcs=DEFAULT_MAX_CONCURRENT_RPCS, channel_arguments=(),
                 socket_path=None, credentials=None):
        # Above max_concurrent_rpcs grpcio answers RESOURCE_EXHAUSTED at once: overload is
        # refused promptly instead of queued without bound. No SO_REUSEPORT: a port another
        # server holds is an error, not shared.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers, thread_name_prefix="grpc"),
            maximum_concurrent_rpcs=max_concurrent_rpcs,
            interceptors=[ReceiveLimit(grpc_listen.receive_limit(channel_arguments))],
            options=grpc_listen.server_options(channel_arguments))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionService(core, metrics), self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(
            ModelService(core, metrics), self._server)
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

    def stop(self, grace_secs):
        """Refuses new calls at once; calls still running after `grace_secs` are cancelled
        with UNAVAILABLE. Returns a threading.Event set once every call has ended."""
        return self._server.stop(grace_secs)
