"""TF Serving's REST API as an ASGI application (starlette requests and responses, run by uvicorn).

Paths and their parsing follow tensorflow_serving/model_servers/http_rest_api_util.cc (matched
case-insensitively, model name and label URL-decoded):
  GET  /v1/models/<name>[/versions/<N>|/labels/<L>]               model status
  GET  /v1/models/<name>[/versions/<N>|/labels/<L>]/metadata      signatures
  POST /v1/models/<name>[/versions/<N>|/labels/<L>]:predict|:classify|:regress
  OPTIONS (CORS preflight, answered when it has an http(s) Origin)
  GET  /monitoring/prometheus/metrics                              request counts and latencies
Any other method or shape of a /v1/ path is "Malformed request" (INVALID_ARGUMENT, 400); a path
outside /v1/ is 404. The server core (`server_core`) resolves the version; the body, read with a
size limit and a deadline, is worked on in starlette's thread pool by `rest_json`.
"""

import asyncio
import json
import re
import time
import urllib.parse
import zlib

from absl import logging
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse as _StrictJSONResponse, PlainTextResponse, Response

from albert_tf.serving import json_values, rest_json
from albert_tf.serving.errors import Code, ServingError

DEFAULT_MAX_BODY_BYTES = 64 << 20
DEFAULT_REQUEST_TIMEOUT_SECS = 30.0
METRICS_PATH = "/monitoring/prometheus/metrics"
_INT64_MAX = 2 ** 63 - 1
_V1_PATH = re.compile(r"/v1/.*", re.IGNORECASE)
_PREDICTION_PATH = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?"
                              r":(classify|regress|predict)", re.IGNORECASE)
_STATUS_PATH = re.compile(r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?"
                          r"(?:/(metadata))?", re.IGNORECASE)
_ORIGIN = re.compile(r"https?://")


class JSONResponse(_StrictJSONResponse):
    """JSON with NaN and ±Infinity as TF Serving writes them (starlette's refuses them); text
    that is not valid Unicode (bytes of the request quoted in an error) goes as \\u escapes."""

    def render(self, content):
        try:
            return json.dumps(content, ensure_ascii=False, allow_nan=True,
                              separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, allow_nan=True, separators=(",", ":")).encode("ascii")


class Route:
    """A parsed request path (ParseModelInfo): model name, version, label, verb ('predict',
    'classify', 'regress' for POST; 'metadata' or '' for GET)."""

    def __init__(self, method, path):
        self.method, self.path = method, path
        self.name, self.version, self.label, self.verb = "", None, None, None
        pattern = {"POST": _PREDICTION_PATH, "GET": _STATUS_PATH}.get(method)
        match = pattern.fullmatch(path) if pattern else None
        if match is None:
            return
        name, version, label, verb = match.groups()
        self.name = urllib.parse.unquote(name or "")
        if version is not None:
            if int(version) > _INT64_MAX:
                raise ServingError(f"Failed to convert version: {version} to numeric.")
            self.version = int(version)
        self.label = None if label is None else urllib.parse.unquote(label)
        self.verb = verb or ""


class RestApp:
    """The ASGI callable over a `server_core.ServerCore`: paths, body limits, metrics."""

    def __init__(self, core, metrics, max_body_bytes=DEFAULT_MAX_BODY_BYTES,
                 request_timeout_secs=DEFAULT_REQUEST_TIMEOUT_SECS):
        self.core, self.metrics = core, metrics
        self.max_body_bytes, self.request_timeout_secs = max_body_bytes, request_timeout_secs

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        started = time.perf_counter()
        path = scope.get("raw_path") or request.url.path.encode()
        path = path.decode("latin-1").split("?", 1)[0]
        parsed = None
        try:
            if path == METRICS_PATH:
                response = PlainTextResponse(self.metrics.exposition())
                await response(scope, receive, send)
                return
            parsed = Route(request.method, path)
            response, code = await self._respond(request, parsed), Code.OK
        except ServingError as error:
            response, code = JSONResponse({"error": str(error)}, status_code=error.status), error.code
        except ClientDisconnect:
            return  # nobody to answer
        except Exception as error:  # a bug of ours: logged, answered as a 500, server stays up
            logging.exception("request %s %s failed", request.method, path)
            response = JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
            code = Code.INTERNAL
        api = "other" if parsed is None or parsed.verb is None else parsed.verb or "status"
        self.metrics.record(parsed.name if parsed else "", api, code, time.perf_counter() - started)
        await response(scope, receive, send)

    async def _respond(self, request, parsed):
        if not _V1_PATH.fullmatch(parsed.path):
            raise ServingError(f"Malformed request: {parsed.method} {parsed.path} (the API is "
                               f"under /v1/)", code=Code.NOT_FOUND)
        if request.method == "OPTIONS":
            if _ORIGIN.search(request.headers.get("origin", "")):
                return Response(status_code=200)
            raise ServingError("Origin header is missing in CORS preflight",
                               code=Code.FAILED_PRECONDITION)
        if parsed.method == "POST" and parsed.verb in ("predict", "classify", "regress"):
            body = await self._read_body(request)
            return JSONResponse(await run_in_threadpool(self._post, parsed, body))
        if parsed.method == "GET" and parsed.verb is not None:
            if not parsed.name:
                raise ServingError("Missing model name in request.")
            if parsed.verb == "metadata":
                return JSONResponse(await run_in_threadpool(
                    lambda: rest_json.metadata(self._runner(parsed))))
            return JSONResponse(rest_json.model_status(self.core.status(parsed.name,
                                                                       parsed.version)))
        raise ServingError(f"Malformed request: {parsed.method} {parsed.path}")

    def _runner(self, parsed):
        return self.core.servable(parsed.name, parsed.version, parsed.label)

    def _post(self, parsed, body):
        """A :predict, :classify or :regress body through the request core (`rest_json`)."""
        document = json_values.parse_request(body)
        return getattr(rest_json, parsed.verb)(document, lambda: self._runner(parsed))

    async def _read_body(self, request):
        """The body, refused with 413 above `max_body_bytes` (before reading it when the
        Content-Length says so) and with 408 when it does not arrive within the timeout."""
        declared = request.headers.get("content-length")
        if declared is not None and not declared.isdigit():
            raise ServingError("bad Content-Length header")
        if declared is not None and int(declared) > self.max_body_bytes:
            raise self._too_large(f" of {declared} bytes")
        chunks, size = [], 0

        async def read():
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise self._too_large()
                chunks.append(chunk)
        try:
            await asyncio.wait_for(read(), self.request_timeout_secs)
        except asyncio.TimeoutError as error:
            raise ServingError(f"request body not received within --request_timeout_secs="
                               f"{self.request_timeout_secs}", status=408,
                               code=Code.DEADLINE_EXCEEDED) from error
        body = b"".join(chunks)
        if request.headers.get("content-encoding", "").strip().lower() == "gzip":
            return self._gunzip(body)
        return body

    def _too_large(self, size="", after=""):
        """The 413 refusal of a body over --max_body_bytes."""
        return ServingError(f"request body{size} exceeds --max_body_bytes={self.max_body_bytes}"
                            f"{after}", status=413, code=Code.RESOURCE_EXHAUSTED)

    def _gunzip(self, body):
        """A gzip body decompressed (as TF Serving's HTTP server does), the size limit applied
        to the decompressed bytes without ever holding more than that."""
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = decompressor.decompress(body, self.max_body_bytes + 1)
        except zlib.error as error:
            raise ServingError(f"Content-Encoding: gzip body is not valid gzip ({error})") from error
        if len(data) > self.max_body_bytes:
            raise self._too_large(after=" once decompressed (Content-Encoding: gzip)")
        if not decompressor.eof:
            raise ServingError("Content-Encoding: gzip body is truncated")
        return data
