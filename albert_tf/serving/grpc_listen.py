"""How the gRPC front end listens, from TF Serving's flags: `--grpc_channel_arguments`
(`key=value,...`, a value that parses as a 32-bit integer passed as one, as server.cc does)
and `--ssl_config_file` (a text-format SSLConfig: server key and certificate, a custom CA,
client_verify to require a client certificate signed by it)."""

import os
import ssl
import tempfile

import grpc
import tensorflow as tf

from albert_tf import errors
from albert_tf.serving import config_protos, preload_checks

_INT32 = (-2 ** 31, 2 ** 31 - 1)


def channel_arguments(text):
    """[(key, value)] of `--grpc_channel_arguments` (empty text: none)."""
    arguments = []
    for item in filter(None, text.split(",")):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise errors.UserInputError(f"--grpc_channel_arguments={text}: {item!r} is not "
                                        f"key=value")
        try:
            number = int(value)
        except ValueError:
            number = None
        in_range = number is not None and _INT32[0] <= number <= _INT32[1]
        arguments.append((key, number if in_range else value))
    return arguments


RECEIVE_LIMIT = "grpc.max_receive_message_length"
# The server's own channel arguments: requests and answers up to 64 MiB (grpcio's default
# receive limit, 4 MiB, would refuse a batch of long sequences), a port held by another server
# refused rather than shared.
DEFAULT_OPTIONS = ((RECEIVE_LIMIT, 64 << 20),
                   ("grpc.max_send_message_length", 64 << 20), ("grpc.so_reuseport", 0))


def server_options(arguments):
    """grpcio server options: the user's `arguments` ([(key, value)]), then the server's
    defaults for the keys they do not set. grpcio applies the first setting of a key, so a
    default listed first would silently win over `--grpc_channel_arguments`. The receive limit
    is lifted in grpcio and applied by the server itself (`receive_limit`), so that its refusal
    can name the flag."""
    given = {key for key, _ in arguments}
    options = [*arguments, *((key, value) for key, value in DEFAULT_OPTIONS if key not in given)]
    return [(key, -1 if key == RECEIVE_LIMIT else value) for key, value in options]


def receive_limit(arguments):
    """The largest request in bytes (-1: any) `--grpc_channel_arguments` allows."""
    limit = dict([*DEFAULT_OPTIONS, *arguments])[RECEIVE_LIMIT]
    try:
        return int(limit)
    except ValueError as error:
        raise errors.UserInputError(f"--grpc_channel_arguments: {RECEIVE_LIMIT}={limit} is not "
                                    f"a number of bytes") from error


def server_credentials(ssl_config_file):
    """grpc.ServerCredentials of the SSLConfig in `ssl_config_file` (server.cc
    BuildServerCredentials): client_verify requires and verifies a client certificate."""
    where = f"--ssl_config_file={ssl_config_file}"
    if not tf.io.gfile.exists(ssl_config_file):
        raise errors.MissingFileError(f"{where}: no such file")
    if preload_checks.unreadable(ssl_config_file):
        raise errors.UserInputError(f"{where}: "
                                    f"{preload_checks.permission_denied(ssl_config_file, 'file')}")
    with tf.io.gfile.GFile(ssl_config_file) as reader:
        text = reader.read()
    try:
        config = config_protos.parse(text, config_protos.SSLConfigProto, where)
    except ValueError as error:
        raise errors.UserInputError(str(error)) from error
    if not config.server_key or not config.server_cert:
        raise errors.UserInputError(f"{where}: needs server_key and server_cert (PEM text)")
    if config.client_verify and not config.custom_ca:
        raise errors.UserInputError(f"{where}: client_verify needs custom_ca, the CA that signs "
                                    f"client certificates")
    check_tls_material(config, where)
    try:
        return grpc.ssl_server_credentials(
            [(config.server_key.encode(), config.server_cert.encode())],
            root_certificates=config.custom_ca.encode() or None,
            require_client_auth=config.client_verify)
    except (TypeError, ValueError) as error:
        raise errors.UserInputError(f"{where}: {error}") from error


def _pem_text(config, field, where):
    value = getattr(config, field)
    if "-----BEGIN " not in value:
        raise errors.UserInputError(
            f"{where}: {field} is not PEM text (\"-----BEGIN ...\"); SSLConfig holds the PEM "
            f"itself, not a file name: got {value.strip()[:60]!r}")
    return value


def check_tls_material(config, where):
    """Refuses an SSLConfig whose PEM gRPC would only reject when the port is bound, after the
    models have loaded, with the cause in its native log alone: text that is not PEM (a file
    name), a certificate or key OpenSSL cannot read, a key that is not the certificate's, a
    custom_ca that is not a certificate. Checked with OpenSSL through Python's ssl module."""
    key, certificate = (_pem_text(config, field, where) for field in ("server_key", "server_cert"))
    for field in ("server_cert", "custom_ca") if config.custom_ca else ("server_cert",):
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(
                cadata=_pem_text(config, field, where))
        except ssl.SSLError as error:
            raise errors.UserInputError(f"{where}: {field} is not a PEM certificate OpenSSL "
                                        f"can read: {error.reason or error}") from error
    with tempfile.TemporaryDirectory() as folder:  # load_cert_chain reads files only
        paths = {}
        for name, value in (("key.pem", key), ("cert.pem", certificate)):
            paths[name] = os.path.join(folder, name)
            with open(os.open(paths[name], os.O_WRONLY | os.O_CREAT, 0o600), "w") as writer:
                writer.write(value)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(
                paths["cert.pem"], paths["key.pem"], password=lambda: b"")
        except ssl.SSLError as error:
            if error.reason == "KEY_VALUES_MISMATCH":
                raise errors.UserInputError(f"{where}: server_key does not match server_cert "
                                            f"(it is not the certificate's private key)") from error
            raise errors.UserInputError(f"{where}: server_key is not an unencrypted PEM private "
                                        f"key OpenSSL can read: {error.reason or error}") from error
