"""Process plumbing both services share: logging setup and the Neo4j driver."""

from __future__ import annotations

import logging
from typing import Any

import neo4j

__all__ = ["configure_logging", "neo4j_driver"]


def configure_logging(level: str = "INFO") -> None:
    """Structured-enough, quiet-by-default logs; the client libraries only speak up on warnings."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for noisy in ("kafka", "neo4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("kafka.net.transport").addFilter(closed_connection_noise)


def closed_connection_noise(record: logging.LogRecord) -> bool:
    """False for what kafka-python (3.0.12) logs about a connection after it was closed: its
    network thread may still be reading when a client is closed from another thread, finds
    the socket gone and logs an error with a traceback ("<KafkaTCPTransport ... (closed)>:
    Error receiving network data"), at every shutdown that races it. Nothing is lost (the
    connection was being closed on purpose); any error on an open connection still shows."""
    return "(closed)>" not in record.getMessage()


def neo4j_driver(
    uri: str,
    user: str = "",
    password: str = "",
    *,
    tls_ca: str = "",
    database: str = "",
    **options: Any,
) -> neo4j.Driver:
    """A driver with auth only when a user is set. Server notifications (e.g. "property key
    does not exist" before the first component grows) are not problems of ours and would flood
    the logs, so they are off.

    ``database`` (``SPARKPROV_NEO4J_DATABASE``): the database every session and query of the
    driver uses; empty: the user's home database (``neo4j`` on Community, where it is the only
    one). It is the driver's default session setting, so no call names it.

    TLS follows the URI: ``bolt+s://`` and ``neo4j+s://`` verify Neo4j's certificate against the
    system's CAs, or against the PEM file ``tls_ca`` when given. The driver only takes a custom
    CA with the plain schemes, so the URI is rewritten to ``bolt://`` / ``neo4j://`` with
    encryption on: the same connection, verified against that CA."""
    auth = (user, password) if user else None
    if tls_ca:
        scheme, sep, rest = uri.partition("://")
        if scheme not in _VERIFIED_SCHEMES or not sep:
            raise ValueError(
                f"a trusted CA file for Neo4j needs a bolt+s:// or neo4j+s:// URI, not {uri!r}"
            )
        uri = f"{_VERIFIED_SCHEMES[scheme]}://{rest}"
        options = {
            **options,
            "encrypted": True,
            "trusted_certificates": neo4j.TrustCustomCAs(tls_ca),
        }
    if database:
        options = {**options, "database": database}
    return neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF", **options)


# The verifying TLS schemes and the plain scheme the driver wants with a custom CA.
_VERIFIED_SCHEMES = {"bolt+s": "bolt", "neo4j+s": "neo4j"}
