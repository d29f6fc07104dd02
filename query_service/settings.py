"""Settings of the query service, built once from the environment in ``__main__``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkprov import defaults

__all__ = ["QuerySettings"]


@dataclass(frozen=True)
class QuerySettings:
    grpc_addr: str = defaults.GRPC_ADDR
    neo4j_uri: str = defaults.NEO4J_URI
    neo4j_user: str = ""
    neo4j_password: str = field(default="", repr=False)
    # A PEM file of the CA that signed Neo4j's certificate, for a bolt+s:// or neo4j+s:// URI
    # (the system's CAs when empty).
    neo4j_tls_ca: str = ""
    # The Neo4j database (empty: the user's home database; Community has one, `neo4j`).
    neo4j_database: str = ""
    max_workers: int = 8
    default_limit: int = 100_000
    max_limit: int = 1_000_000
    # When set, every call but health checks needs the metadata "authorization: Bearer <token>".
    auth_token: str = field(default="", repr=False)
    # PEM files of the server's certificate (chain) and private key. When set, gRPC is served
    # over TLS only; the bearer token then no longer travels in clear text.
    tls_cert: str = ""
    tls_key: str = ""
    # How long a call may wait for Neo4j when it is away (connecting, then retrying) before it
    # ends with UNAVAILABLE; the driver reconnects by itself once Neo4j is back.
    neo4j_timeout_s: float = 5.0
    # Prometheus metrics (query_service.metrics) at http://<this>/metrics; empty: not served.
    metrics_addr: str = defaults.QUERY_METRICS_ADDR

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError(
                "gRPC TLS needs both SPARKPROV_QUERY_TLS_CERT and SPARKPROV_QUERY_TLS_KEY"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> QuerySettings:
        return cls(
            grpc_addr=environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR),
            neo4j_uri=environ.get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI),
            neo4j_user=environ.get(defaults.ENV_NEO4J_USER, ""),
            neo4j_password=environ.get(defaults.ENV_NEO4J_PASSWORD, ""),
            neo4j_tls_ca=environ.get(defaults.ENV_NEO4J_TLS_CA, ""),
            neo4j_database=environ.get(defaults.ENV_NEO4J_DATABASE, ""),
            max_workers=int(environ.get("SPARKPROV_QUERY_WORKERS", str(cls.max_workers))),
            auth_token=environ.get("SPARKPROV_QUERY_TOKEN", ""),
            tls_cert=environ.get("SPARKPROV_QUERY_TLS_CERT", ""),
            tls_key=environ.get("SPARKPROV_QUERY_TLS_KEY", ""),
            neo4j_timeout_s=float(
                environ.get("SPARKPROV_QUERY_NEO4J_TIMEOUT_S", str(cls.neo4j_timeout_s))
            ),
            metrics_addr=environ.get(defaults.ENV_QUERY_METRICS_ADDR, defaults.QUERY_METRICS_ADDR),
        )
