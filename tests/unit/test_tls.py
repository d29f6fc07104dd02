"""TLS by configuration: the real query server on 127.0.0.1 with a certificate made here (a fake
store behind it) answers a client that trusts the certificate and is unreachable for one that does
not; the bearer token still guards every RPC, streaming ones included. The Neo4j driver of both
services verifies a bolt+s:// / neo4j+s:// server against a CA file when one is given."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import neo4j
import networkx as nx
import pytest
from click.testing import CliRunner
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ingest_service.settings import IngestSettings
from query_service.server import create_server
from query_service.settings import QuerySettings
from sparkprov import defaults, runtime
from sparkprov.cli import main
from sparkprov.client import QueryClient
from sparkprov.query_errors import Unauthenticated, Unavailable
from viewer.gateway import Gateway, GatewayError
from viewer.settings import ViewerSettings

from .test_traces import FakeStore

TOKEN = "test-token-not-a-secret"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-nodes", "-days", "1",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-keyout", str(key), "-out", str(cert),
            "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def address(certificate: tuple[Path, Path]) -> Iterator[str]:
    cert, key = certificate
    settings = QuerySettings(
        grpc_addr="127.0.0.1:0", tls_cert=str(cert), tls_key=str(key), auth_token=TOKEN
    )
    store = FakeStore(nx.DiGraph([(0, 1), (1, 2), (2, 3)]))
    server, port = create_server(settings, store)  # type: ignore[arg-type]
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def test_a_client_trusting_the_certificate_is_served(
    address: str, certificate: tuple[Path, Path]
) -> None:
    with QueryClient(address, timeout_s=10, tls_ca=certificate[0], token=TOKEN) as client:
        trace = client.backward_trace(["3"])
        assert [n.id for n in trace.nodes] == ["3", "2", "1", "0"]
        chunks = list(client.backward_trace_stream(["3"], chunk_size=2))
        assert [n.id for c in chunks for n in c.nodes] == ["3", "2", "1", "0"]


@pytest.mark.parametrize("channel", ["system CAs", "plaintext"])
def test_a_client_not_trusting_the_certificate_cannot_connect(address: str, channel: str) -> None:
    tls = channel == "system CAs"
    client = QueryClient(address, timeout_s=5, tls=tls, token=TOKEN)
    with client, pytest.raises(Unavailable) as failed:
        client.backward_trace(["3"])
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE


def test_over_tls_every_rpc_still_needs_the_token_but_health_checks(
    address: str, certificate: tuple[Path, Path]
) -> None:
    with QueryClient(address, timeout_s=10, tls_ca=certificate[0]) as client:
        calls: list[Any] = [
            lambda: client.backward_trace(["3"]),
            lambda: client.runs(),
            lambda: list(client.forward_trace_stream(["0"])),
        ]
        for call in calls:
            with pytest.raises(Unauthenticated) as denied:
                call()
            assert denied.value.code == grpc.StatusCode.UNAUTHENTICATED
        health = health_pb2_grpc.HealthStub(client._channel)
        reply = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_tls_needs_both_certificate_and_key() -> None:
    with pytest.raises(ValueError, match="SPARKPROV_QUERY_TLS_KEY"):
        QuerySettings.from_env({"SPARKPROV_QUERY_TLS_CERT": "/some/cert.pem"})
    settings = QuerySettings.from_env(
        {"SPARKPROV_QUERY_TLS_CERT": "c.pem", "SPARKPROV_QUERY_TLS_KEY": "k.pem"}
    )
    assert (settings.tls_cert, settings.tls_key) == ("c.pem", "k.pem")


# -- Neo4j ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "plain"),
    [("bolt+s://db:7687", "bolt://db:7687"), ("neo4j+s://db:7687", "neo4j://db:7687")],
)
def test_the_neo4j_driver_verifies_against_the_given_ca(
    uri: str, plain: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real driver accepts the combination (it refuses a custom CA with a +s scheme)...
    with runtime.neo4j_driver(uri, "neo4j", "pw", tls_ca=str(certificate[0])) as driver:
        assert driver.encrypted
    # ... and is handed the plain scheme, encryption on and exactly that CA.
    seen: dict[str, Any] = {}

    def driver_(target: str, **config: Any) -> None:
        seen.update(config, uri=target)

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", driver_)
    runtime.neo4j_driver(uri, "neo4j", "pw", tls_ca=str(certificate[0]))
    assert seen["uri"] == plain
    assert seen["encrypted"] is True
    trusted = seen["trusted_certificates"]
    assert isinstance(trusted, neo4j.TrustCustomCAs)
    assert list(trusted.certs) == [str(certificate[0])]
    seen.clear()
    runtime.neo4j_driver(uri, "neo4j", "pw")  # no CA: the URI alone decides (system CAs)
    assert seen["uri"] == uri
    assert "trusted_certificates" not in seen


def test_a_ca_without_a_verifying_scheme_is_refused() -> None:
    for uri in ("bolt://db:7687", "bolt+ssc://db:7687", "db:7687"):
        with pytest.raises(ValueError, match=r"bolt\+s:// or neo4j\+s://"):
            runtime.neo4j_driver(uri, tls_ca="/ca.pem")


def test_both_services_read_the_neo4j_ca_from_the_same_variable() -> None:
    env = {"SPARKPROV_NEO4J_URI": "neo4j+s://db:7687", "SPARKPROV_NEO4J_TLS_CA": "/etc/ca.pem"}
    ingest, query = IngestSettings.from_env(env), QuerySettings.from_env(env)
    assert ingest.neo4j_tls_ca == query.neo4j_tls_ca == "/etc/ca.pem"
    assert ingest.neo4j_uri == query.neo4j_uri == "neo4j+s://db:7687"


def test_the_cli_reaches_the_service_over_tls_with_the_token(
    address: str, certificate: tuple[Path, Path]
) -> None:
    args = ["--address", address, "--timeout", "10", "--token", TOKEN]
    trusted = CliRunner().invoke(
        main, [*args, "--tls-ca", str(certificate[0]), "trace", "back", "3", "--format", "json"]
    )
    assert trusted.exit_code == 0, trusted.output
    assert {n["id"] for n in json.loads(trusted.stdout)["nodes"]} == {"0", "1", "2", "3"}
    plaintext = CliRunner().invoke(main, [*args, "trace", "back", "3"])
    assert plaintext.exit_code == 5  # UNAVAILABLE: a TLS server does not speak plaintext
    untrusted = CliRunner().invoke(main, [*args, "--tls", "trace", "back", "3"])
    assert untrusted.exit_code == 5  # the system's CAs did not sign it


def test_clients_read_tls_from_the_environment(
    address: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(defaults.ENV_QUERY_TLS_CA, str(certificate[0]))
    monkeypatch.setenv(defaults.ENV_QUERY_TOKEN, TOKEN)
    with QueryClient(address, timeout_s=10) as client:
        assert [n.id for n in client.backward_trace(["3"]).nodes] == ["3", "2", "1", "0"]
    settings = ViewerSettings.from_env(os.environ | {defaults.ENV_GRPC_ADDR: address})
    assert settings.tls_ca == str(certificate[0])
    gateway = Gateway(settings.grpc_addr, settings.token, 10.0, tls_ca=settings.tls_ca)
    try:
        drawn = gateway.trace(["3"], backward=True, depth=0, max_nodes=10)
        assert {n["id"] for n in drawn["nodes"]} == {"0", "1", "2", "3"}
    finally:
        gateway.close()
    monkeypatch.delenv(defaults.ENV_QUERY_TLS_CA)
    plain = Gateway(address, TOKEN, 5.0)  # no CA given, none in the environment: plaintext
    try:
        with pytest.raises(GatewayError):
            plain.trace(["3"], backward=True, depth=0, max_nodes=10)
    finally:
        plain.close()
