"""How the gRPC API listens, by TF Serving's flags: --grpc_channel_arguments
(tensorflow_model_server_test.py testGoodGrpcChannelArgs), --grpc_socket_path (testPredictUDS),
and --ssl_config_file (ssl_config.proto; server.cc BuildServerCredentials), driven by stock grpc
clients with and without a client certificate. The certificates are made here with the
`cryptography` package."""

import datetime
import json

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
import grpc
import ipaddress
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from albert_tf import errors, serving
from tests.serving_toy_model import write_version


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("half_plus_three"))
    write_version(path, 1)
    return path


def _predict(channel):
    """VerifyPredictRequest of tensorflow_model_server_test_base.py (x = 2, y = 0.5 x + 3)."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "default"
    request.inputs["x"].dtype = types_pb2.DT_FLOAT
    request.inputs["x"].float_val.append(2.0)
    request.inputs["x"].tensor_shape.dim.add().size = 1
    result = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=30)
    return list(tf.make_ndarray(result.outputs["y"]))


def test_good_grpc_channel_args(base):
    """tensorflow_model_server_test.py testGoodGrpcChannelArgs."""
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
        grpc_channel_arguments="grpc.max_connection_age_ms=2000,grpc.lb_policy_name=grpclb"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}") as channel:
            assert _predict(channel) == [4.0]
    finally:
        server.shutdown()
    with pytest.raises(errors.UserInputError,
                       match=r"^--grpc_channel_arguments=grpc.foo: 'grpc.foo' is not key=value$"):
        serving.start_python_server(serving.ServerOptions(
            model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
            grpc_channel_arguments="grpc.foo"))


def test_a_users_channel_argument_wins_over_the_servers_default(base):
    """A receive limit smaller than the request refuses it, as the same argument does in TF
    Serving (the server's own 64 MiB limit must not win); the default still lets it through."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "default"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([2.0] * 400, tf.float32))  # 1.6 kB
    for arguments, refused in (("grpc.max_receive_message_length=300", True), ("", False)):
        server = serving.start_python_server(serving.ServerOptions(
            model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
            grpc_channel_arguments=arguments))
        try:
            with grpc.insecure_channel(f"127.0.0.1:{server.grpc.port}") as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                if refused:
                    with pytest.raises(grpc.RpcError) as error:
                        stub.Predict(request, timeout=30)
                    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                else:
                    assert len(tf.make_ndarray(stub.Predict(request, timeout=30).outputs["y"])) == 400
        finally:
            server.shutdown()


def test_predict_uds(base, tmp_path):
    """tensorflow_model_server_test.py testPredictUDS: the same API on a Unix socket."""
    socket_path = str(tmp_path / "tf-serving.sock")
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
        grpc_socket_path=socket_path))
    try:
        with grpc.insecure_channel(f"unix:{socket_path}") as channel:
            assert _predict(channel) == [4.0]
    finally:
        server.shutdown()


# --- TLS --------------------------------------------------------------------------------------

def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(name, key, issuer=None, issuer_key=None, ca=False):
    """A certificate for `name` (localhost and 127.0.0.1 for a server) signed by `issuer`
    (self-signed without one), valid for a day either side of now."""
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(issuer.subject if issuer else subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


class _Authority:
    """A CA that signs certificates: (key PEM, certificate PEM) pairs."""

    def __init__(self, name):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.certificate = _certificate(name, self.key, ca=True)
        self.pem = self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(self, name):
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = _certificate(name, key, self.certificate, self.key)
        return _pem_key(key), certificate.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki():
    authority, stranger = _Authority("test CA"), _Authority("another CA")
    return {"ca": authority.pem, "server": authority.issue("localhost"),
            "client": authority.issue("client"), "stranger": stranger.issue("client")}


def _ssl_config(path, pki, client_verify):
    """The SSLConfig text file a TF Serving user writes (PEM text in quoted strings)."""
    key, certificate = pki["server"]
    path.write_text(f"server_key: {json.dumps(key.decode())}\n"
                    f"server_cert: {json.dumps(certificate.decode())}\n"
                    f"custom_ca: {json.dumps(pki['ca'].decode())}\n"
                    f"client_verify: {str(client_verify).lower()}\n")
    return str(path)


def _secure_channel(port, pki, client=None):
    key, certificate = pki[client] if client else (None, None)
    credentials = grpc.ssl_channel_credentials(root_certificates=pki["ca"], private_key=key,
                                               certificate_chain=certificate)
    return grpc.secure_channel(f"127.0.0.1:{port}", credentials,
                               options=[("grpc.ssl_target_name_override", "localhost")])


def _refused(channel):
    with pytest.raises(grpc.RpcError) as error:
        _predict(channel)
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("client_verify", [False, True])
def test_ssl_config_file(base, tmp_path, pki, client_verify):
    """--ssl_config_file: gRPC over TLS with the server's key and certificate; with
    client_verify a client must show a certificate the custom CA signed."""
    config = _ssl_config(tmp_path / "ssl.config", pki, client_verify)
    server = serving.start_python_server(serving.ServerOptions(
        model_base_path=base, model_name="default", rest_api_port=0, grpc_port=0,
        ssl_config_file=config))
    port = server.grpc.port
    try:
        with _secure_channel(port, pki, "client") as channel:
            assert _predict(channel) == [4.0]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            _refused(channel)
        with _secure_channel(port, pki) as channel:  # no client certificate
            if client_verify:
                _refused(channel)
            else:
                assert _predict(channel) == [4.0]
        if client_verify:
            with _secure_channel(port, pki, "stranger") as channel:
                _refused(channel)
    finally:
        server.shutdown()


@pytest.mark.parametrize("text, message", [
    ("server_key: 'k'", "needs server_key and server_cert (PEM text)"),
    ("server_key: 'k' server_cert: 'c' client_verify: true",
     "client_verify needs custom_ca, the CA that signs client certificates"),
    ("server_pem: 'k'", "Error parsing text-format tensorflow.serving.SSLConfig: 1:1 : "
                        "Message type \"tensorflow.serving.SSLConfig\" has no field named "
                        "\"server_pem\"."),
])
def test_a_bad_ssl_config_is_refused_before_loading(tmp_path, text, message):
    path = tmp_path / "ssl.config"
    path.write_text(text)
    with pytest.raises(errors.UserInputError) as error:
        serving.start_python_server(serving.ServerOptions(
            model_base_path=str(tmp_path / "never_read"), model_name="default", rest_api_port=0,
            grpc_port=0, ssl_config_file=str(path)))
    assert str(error.value) == f"--ssl_config_file={path}: {message}"


def _garbage(kind):
    return f"-----BEGIN {kind}-----\nbm90IGEga2V5IG9yIGEgY2VydGlmaWNhdGU=\n-----END {kind}-----\n"


@pytest.mark.parametrize("case, message", [
    ("mismatched key", "server_key does not match server_cert (it is not the certificate's "
                       "private key)"),
    ("garbage key", "server_key is not an unencrypted PEM private key OpenSSL can read: "),
    ("garbage certificate", "server_cert is not a PEM certificate OpenSSL can read: "),
    ("garbage CA", "custom_ca is not a PEM certificate OpenSSL can read: "),
    ("file name as key", "server_key is not PEM text (\"-----BEGIN ...\"); SSLConfig holds the "
                         "PEM itself, not a file name: got '/etc/tls/server.key'"),
])
def test_bad_tls_material_is_named_before_loading(tmp_path, pki, case, message):
    """gRPC itself takes any text and fails only when the port is bound, after the models
    loaded, with "cannot listen" and the cause in its native log alone."""
    key, certificate = pki["server"]
    fields = {"server_key": key.decode(), "server_cert": certificate.decode(),
              "custom_ca": pki["ca"].decode()}
    fields.update({
        "mismatched key": {"server_key": pki["stranger"][0].decode()},
        "garbage key": {"server_key": _garbage("PRIVATE KEY")},
        "garbage certificate": {"server_cert": _garbage("CERTIFICATE")},
        "garbage CA": {"custom_ca": _garbage("CERTIFICATE")},
        "file name as key": {"server_key": "/etc/tls/server.key"}}[case])
    path = tmp_path / "ssl.config"
    path.write_text("".join(f"{name}: {json.dumps(value)}\n" for name, value in fields.items()))
    with pytest.raises(errors.UserInputError) as error:
        serving.start_python_server(serving.ServerOptions(
            model_base_path=str(tmp_path / "never_read"), model_name="default", rest_api_port=0,
            grpc_port=0, ssl_config_file=str(path)))
    assert str(error.value).startswith(f"--ssl_config_file={path}: {message}")
    assert "\n" not in str(error.value)
