"""The one error type of the built-in server: a message for the client and TF Serving's HTTP code."""


class ServingError(ValueError):
    """A request the server cannot answer; sent back as `{"error": message}` with `status`.

    The codes are TF Serving's: 400 a malformed request or an input the graph rejects, 404 an
    unknown path, model, version or label, 408 a body that did not arrive in time, 413 a body
    over the limit, 500 a failure inside the graph, 501 an HTTP method the API does not have.
    """

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status
