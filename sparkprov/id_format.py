"""Node ids: signed 64-bit integers, deterministic in (run, operator, row identity).

Spark computes them with ``xxhash64`` (see capture_agent), Neo4j stores them as integers in the
``id`` property, and the gRPC API carries them as decimal text. This module converts between the
text and the integer forms and is the only place that knows the format.
"""

from __future__ import annotations

from sparkprov.limits import quote

__all__ = ["InvalidNodeId", "format_node_id", "parse_node_id"]

_MIN = -(2**63)
_MAX = 2**63 - 1


class InvalidNodeId(ValueError):
    """The text is not a node id."""


def format_node_id(node_id: int) -> str:
    return str(node_id)


def parse_node_id(text: str) -> int:
    try:
        value = int(text.strip(), 10)
    except (ValueError, AttributeError) as e:
        raise InvalidNodeId(f"node id {quote(text)} is not a decimal 64-bit integer") from e
    if not _MIN <= value <= _MAX:
        raise InvalidNodeId(f"node id {quote(text)} is outside the signed 64-bit range")
    return value
