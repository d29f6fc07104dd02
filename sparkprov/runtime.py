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


def neo4j_driver(uri: str, user: str = "", password: str = "", **options: Any) -> neo4j.Driver:
    """A driver with auth only when a user is set. Server notifications (e.g. "property key
    does not exist" before the first component grows) are not problems of ours and would flood
    the logs, so they are off."""
    auth = (user, password) if user else None
    return neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF", **options)
