"""Connection limits of the built-in REST server: a client that never finishes its headers and
an idle keep-alive connection are closed, and connections over the bound are refused at once."""

import socket
import time

import pytest

from albert_tf import serving
from tests.serving_toy_model import write_version


@pytest.fixture(scope="module")
def export_base(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("half_plus"))
    write_version(base, 1)
    return base


def _closed_after(connection, limit):
    """Seconds until the server closes `connection` (reads until EOF), at most `limit`."""
    connection.settimeout(limit)
    start = time.monotonic()
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    return time.monotonic() - start, data


def test_unfinished_headers_and_idle_keep_alive_connections_are_closed(export_base):
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=export_base, model_name="m", rest_api_port=0, request_timeout_secs=1,
        header_timeout_secs=1))
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(b"GET /v1/models/m HTTP/1.1\r\nHost: x\r\n")  # never ends
            seconds, _ = _closed_after(connection, 10)
            assert 0.5 < seconds < 5
        with socket.create_connection(("127.0.0.1", port)) as connection:  # sends nothing
            assert 0.5 < _closed_after(connection, 10)[0] < 5
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(b"GET /v1/models/m HTTP/1.1\r\nHost: x\r\n\r\n")
            seconds, data = _closed_after(connection, 10)  # answered, then idle until closed
            assert data.startswith(b"HTTP/1.1 200") and b"AVAILABLE" in data and seconds < 5
    finally:
        server.shutdown()


def test_connections_over_the_bound_are_refused_at_once(export_base):
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=export_base, model_name="m", rest_api_port=0, max_connections=2))
    port = server.server_address[1]
    request = b"GET /v1/models/m HTTP/1.1\r\nHost: x\r\n\r\n"
    try:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        for connection in held:
            connection.sendall(request)
            assert connection.recv(65536).startswith(b"HTTP/1.1 200")  # kept alive
        with socket.create_connection(("127.0.0.1", port), timeout=10) as third:
            start = time.monotonic()
            third.sendall(request)
            assert third.recv(65536).startswith(b"HTTP/1.1 503")
            assert time.monotonic() - start < 2
        for connection in held:
            connection.close()
    finally:
        server.shutdown()
