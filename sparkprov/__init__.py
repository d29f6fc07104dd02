"""sparkprov: fine-grained provenance for PySpark, served as microservices.

The public API, imported lazily (``import sparkprov`` loads neither Spark nor gRPC):

- :class:`ProvenanceSession` (capture_agent.session) captures a run of a Spark job;
- :class:`QueryClient` (sparkprov.client) asks the query service about it, returning the
  dataclasses of :mod:`sparkprov.query_model` and raising :class:`QueryError` and its subclasses
  :class:`NotFound`, :class:`InvalidArgument`, :class:`Unavailable`, :class:`Unauthenticated`.

Also shared by the services: event encoding, node ids and connection defaults. The protobuf
modules generated from proto/ live in ``sparkprov.v1`` (built by ``make setup``, never
committed); only :mod:`sparkprov.events`, the query adapters and the services' adapter modules
import them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capture_agent.session import ProvenanceSession
    from sparkprov.client import QueryClient
    from sparkprov.query_errors import (
        InvalidArgument,
        NotFound,
        QueryError,
        Unauthenticated,
        Unavailable,
    )

__all__ = [
    "InvalidArgument",
    "NotFound",
    "ProvenanceSession",
    "QueryClient",
    "QueryError",
    "Unauthenticated",
    "Unavailable",
]

_WHERE = {
    "ProvenanceSession": "capture_agent.session",
    "QueryClient": "sparkprov.client",
    "QueryError": "sparkprov.query_errors",
    "NotFound": "sparkprov.query_errors",
    "InvalidArgument": "sparkprov.query_errors",
    "Unavailable": "sparkprov.query_errors",
    "Unauthenticated": "sparkprov.query_errors",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sparkprov' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
