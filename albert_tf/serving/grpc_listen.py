"""How the gRPC front end listens, from TF Serving's flags: `--grpc_channel_arguments`
(`key=value,...`, a value that parses as a 32-bit integer passed as one, as server.cc does)
and `--ssl_config_file` (a text-format SSLConfig: server key and certificate, a custom CA,
client_verify to require a client certificate signed by it)."""

import grpc
import tensorflow as tf

from albert_tf import errors
from albert_tf.serving import config_protos

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


# The server's own channel arguments: requests and answers up to 64 MiB (grpcio's default
# receive limit, 4 MiB, would refuse a batch of long sequences), a port held by another server
# refused rather than shared.
DEFAULT_OPTIONS = (("grpc.max_receive_message_length", 64 << 20),
                   ("grpc.max_send_message_length", 64 << 20), ("grpc.so_reuseport", 0))


def server_options(arguments):
    """grpcio server options: the user's `arguments` ([(key, value)]), then the server's
    defaults for the keys they do not set. grpcio applies the first setting of a key, so a
    default listed first would silently win over `--grpc_channel_arguments`."""
    given = {key for key, _ in arguments}
    return [*arguments, *((key, value) for key, value in DEFAULT_OPTIONS if key not in given)]


def server_credentials(ssl_config_file):
    """grpc.ServerCredentials of the SSLConfig in `ssl_config_file` (server.cc
    BuildServerCredentials): client_verify requires and verifies a client certificate."""
    where = f"--ssl_config_file={ssl_config_file}"
    if not tf.io.gfile.exists(ssl_config_file):
        raise errors.MissingFileError(f"{where}: no such file")
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
    try:
        return grpc.ssl_server_credentials(
            [(config.server_key.encode(), config.server_cert.encode())],
            root_certificates=config.custom_ca.encode() or None,
            require_client_auth=config.client_verify)
    except (TypeError, ValueError) as error:
        raise errors.UserInputError(f"{where}: {error}") from error
