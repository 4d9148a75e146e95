"""TF Serving's REST API as an ASGI application (starlette requests and responses, run by uvicorn).

Paths, as tensorflow/serving's `api_rest.md` documents them:
  GET  /v1/models/<name>[/versions/<N>]                  model status (all loaded versions)
  GET  /v1/models/<name>[/versions/<N>]/metadata         signatures
  POST /v1/models/<name>[/versions/<N>]:predict|:classify|:regress
  GET  /monitoring/prometheus/metrics                    request counts and latencies
`/labels/<L>` is recognised and answered 404 (labels need a TF Serving model config file).

The graph runs on starlette's thread pool, so the event loop keeps accepting and answering (a
slow request never blocks the others); the body is read with a size limit and a deadline.
"""

import asyncio
import json
import re
import time

from absl import logging
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse as _StrictJSONResponse, PlainTextResponse

from albert_tf.serving.errors import ServingError

DEFAULT_MAX_BODY_BYTES = 64 << 20
DEFAULT_REQUEST_TIMEOUT_SECS = 30.0
METRICS_PATH = "/monitoring/prometheus/metrics"
_MODEL_PATH = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?"
                         r"(/metadata|:predict|:classify|:regress)?/?")
_POST_ACTIONS = ("predict", "classify", "regress")


class JSONResponse(_StrictJSONResponse):
    """JSON with NaN and ±Infinity as TF Serving writes them (starlette's refuses them)."""

    def render(self, content):
        return json.dumps(content, ensure_ascii=False, allow_nan=True,
                          separators=(",", ":")).encode("utf-8")


def route(path, model_name):
    """(version or None, action) of a TF Serving path: action '' (status), 'metadata',
    'predict', 'classify' or 'regress'; a 404 ServingError for anything else."""
    match = _MODEL_PATH.fullmatch(path)
    if match is None:
        raise ServingError(f"Malformed request: {path}", status=404)
    name, version, label, action = match.groups()
    if name != model_name:
        raise ServingError(f"Servable not found for request: Latest({name})", status=404)
    if label is not None:
        raise ServingError(f"Unrecognized servable version label: {label}", status=404)
    return (None if version is None else int(version)), (action or "").lstrip("/:")


def _api_name(path):
    """The metrics label of a path: predict, classify, regress, metadata, status or other."""
    if path == METRICS_PATH:
        return "metrics"
    match = _MODEL_PATH.fullmatch(path)
    if match is None:
        return "other"
    return (match.group(4) or "/status").lstrip("/:")


class RestApp:
    """The ASGI callable: one `ServedVersions`, body limits, metrics."""

    def __init__(self, versions, metrics, max_body_bytes=DEFAULT_MAX_BODY_BYTES,
                 request_timeout_secs=DEFAULT_REQUEST_TIMEOUT_SECS):
        self.versions, self.metrics = versions, metrics
        self.max_body_bytes, self.request_timeout_secs = max_body_bytes, request_timeout_secs

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        started = time.perf_counter()
        api = _api_name(request.url.path)
        try:
            response = await self._respond(request)
        except ServingError as error:
            response = JSONResponse({"error": str(error)}, status_code=error.status)
        except ClientDisconnect:
            return  # nobody to answer
        except Exception as error:  # a bug of ours: logged, answered as a 500, server stays up
            logging.exception("request %s %s failed", request.method, request.url.path)
            response = JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
        self.metrics.record(self.versions.model_name, api, response.status_code,
                            time.perf_counter() - started)
        await response(scope, receive, send)

    async def _respond(self, request):
        method, path = request.method, request.url.path
        if method not in ("GET", "POST"):
            raise ServingError(f"HTTP method {method} is not supported", status=501)
        if path == METRICS_PATH and method == "GET":
            return PlainTextResponse(self.metrics.exposition())
        version, action = route(path, self.versions.model_name)
        if method == "GET" and action == "":
            return JSONResponse(self.versions.status(version))
        if method == "GET" and action == "metadata":
            return JSONResponse(self.versions.get(version).metadata())
        if method == "POST" and action in _POST_ACTIONS:
            runner = self.versions.get(version)
            body = await self._read_body(request)
            result = await run_in_threadpool(self._call, runner, action, body)
            return JSONResponse(result)
        raise ServingError(f"Malformed request: {method} {path} (GET /v1/models/<name>"
                           f"[/metadata], POST …:predict, :classify or :regress)", status=404)

    @staticmethod
    def _call(runner, action, body):
        try:
            request = json.loads(body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ServingError(f"JSON Parse error: {error}") from error
        return getattr(runner, action)(request)

    async def _read_body(self, request):
        """The body, refused with 413 above `max_body_bytes` (before reading it when the
        Content-Length says so) and with 408 when it does not arrive within the timeout."""
        declared = request.headers.get("content-length")
        if declared is not None and not declared.isdigit():
            raise ServingError("bad Content-Length header")
        if declared is not None and int(declared) > self.max_body_bytes:
            raise ServingError(f"request body of {declared} bytes exceeds --max_body_bytes="
                               f"{self.max_body_bytes}", status=413)
        chunks, size = [], 0

        async def read():
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise ServingError(f"request body exceeds --max_body_bytes="
                                       f"{self.max_body_bytes}", status=413)
                chunks.append(chunk)
        try:
            await asyncio.wait_for(read(), self.request_timeout_secs)
        except asyncio.TimeoutError as error:
            raise ServingError(f"request body not received within --request_timeout_secs="
                               f"{self.request_timeout_secs}", status=408) from error
        return b"".join(chunks)
