"""Settings of the query service, built once from the environment in ``__main__``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkprov import defaults

__all__ = ["QuerySettings"]


@dataclass(frozen=True)
class QuerySettings:
    grpc_addr: str = defaults.GRPC_ADDR
    neo4j_uri: str = defaults.NEO4J_URI
    neo4j_user: str = ""
    neo4j_password: str = ""
    max_workers: int = 8
    default_limit: int = 100_000
    max_limit: int = 1_000_000
    # When set, every call but health checks needs the metadata "authorization: Bearer <token>".
    auth_token: str = ""
    # How long a call may wait for Neo4j when it is away (connecting, then retrying) before it
    # ends with UNAVAILABLE; the driver reconnects by itself once Neo4j is back.
    neo4j_timeout_s: float = 5.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> QuerySettings:
        return cls(
            grpc_addr=environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR),
            neo4j_uri=environ.get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI),
            neo4j_user=environ.get(defaults.ENV_NEO4J_USER, ""),
            neo4j_password=environ.get(defaults.ENV_NEO4J_PASSWORD, ""),
            max_workers=int(environ.get("SPARKPROV_QUERY_WORKERS", str(cls.max_workers))),
            auth_token=environ.get("SPARKPROV_QUERY_TOKEN", ""),
            neo4j_timeout_s=float(
                environ.get("SPARKPROV_QUERY_NEO4J_TIMEOUT_S", str(cls.neo4j_timeout_s))
            ),
        )
