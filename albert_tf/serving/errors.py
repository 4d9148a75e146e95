"""The one error type of the built-in server, with TF Serving's canonical status codes.

`Code` holds the canonical (absl / gRPC) status codes by name and number, so a gRPC front end can
map them one to one; `HTTP_STATUS` is TF Serving's own mapping from them to HTTP status codes
(tensorflow_serving/model_servers/http_server.cc, ToHTTPStatusCode). Importing this module
imports nothing else of the project.
"""

import enum

import grpc

# Canonical status codes, as gRPC defines them: the names TF Serving's metrics use, the numbers
# gRPC sends.
Code = enum.IntEnum("Code", [(code.name, code.value[0]) for code in grpc.StatusCode],
                    module=__name__)


HTTP_STATUS = {
    Code.OK: 200, Code.CANCELLED: 499, Code.UNKNOWN: 500, Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504, Code.NOT_FOUND: 404, Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403, Code.RESOURCE_EXHAUSTED: 429, Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409, Code.OUT_OF_RANGE: 400, Code.UNIMPLEMENTED: 501, Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503, Code.DATA_LOSS: 500, Code.UNAUTHENTICATED: 401,
}


class ServingError(ValueError):
    """A request the server cannot answer; sent back as `{"error": message}`. `code` is the
    canonical status (INVALID_ARGUMENT unless said otherwise), `status` the HTTP code (TF
    Serving's mapping of `code` unless given: the server's own 408 and 413 limits are not TF
    Serving's)."""

    def __init__(self, message, status=None, code=Code.INVALID_ARGUMENT):
        super().__init__(message)
        self.code = Code(code)
        self.status = status if status is not None else HTTP_STATUS[self.code]
