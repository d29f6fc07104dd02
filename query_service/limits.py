"""Size limits of query requests, checked before any work, and the size of error messages.

Every request is held to these before it reaches the store; a request over one ends with
INVALID_ARGUMENT naming the field and the limit. Messages quote at most a short prefix of an input
(``sparkprov.limits.quote``), and :func:`message` caps the whole status text: gRPC sends it in
the response's metadata (8 KB by default, percent-encoded), and a status over that limit reaches
the client as a transport error instead of the status.

:func:`check` reads the request's fields by their names in proto/sparkprov/v1/query.proto, so one
table covers every RPC; fields a request does not have are skipped.
"""

from __future__ import annotations

from typing import Any

from query_service.model import InvalidArgument
from sparkprov.limits import MAX_NAME_BYTES, MAX_TEXT_BYTES, LimitExceeded, check_string

__all__ = [
    "MAX_EQUALS",
    "MAX_IDS",
    "MAX_ID_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_MODULES",
    "MAX_NAME_BYTES",
    "MAX_VALUE_BYTES",
    "check",
    "message",
]

# Node ids in one field of a request (node_ids, on_node_ids, false_tokens, and the keys of
# token_costs and token_probabilities, each).
MAX_IDS = 10_000
# A node id is a signed 64-bit integer in decimal: 20 characters at most, some room for spaces.
MAX_ID_CHARS = 32
# Module names in modules and in zoomed_out_modules, each.
MAX_MODULES = 1_000
# FindNodes: attribute conditions, their values' size (names are held to MAX_NAME_BYTES, as
# stored: run ids, relations, workflows, module and attribute names are names on the wire too).
MAX_EQUALS = 100
MAX_VALUE_BYTES = MAX_TEXT_BYTES
# The status text of an error, UTF-8.
MAX_MESSAGE_BYTES = 1024

_ID = ("node_id",)
_ID_LISTS = ("node_ids", "on_node_ids", "false_tokens", "token_costs", "token_probabilities")
_NAMES = (
    *("run_id", "relation", "workflow"),
    # workflow versions (query_service.versions)
    *("version_a", "version_b", "run_a", "run_b", "relation_a", "relation_b", "sink", "sink_b"),
)
_NAME_LISTS = ("modules", "zoomed_out_modules")


def _has(request: Any, name: str) -> bool:
    return name in request.DESCRIPTOR.fields_by_name


def _count(name: str, values: Any, limit: int) -> None:
    if len(values) > limit:
        raise InvalidArgument(f"{name} has {len(values)} entries, over the limit of {limit}")


def _id(name: str, text: str) -> None:
    if len(text) > MAX_ID_CHARS:
        raise InvalidArgument(
            f"{name}: a node id of {len(text)} characters, over the limit of {MAX_ID_CHARS}"
        )


def check(request: Any) -> None:
    """Raise InvalidArgument if any field of the request is over its limit."""
    try:
        for name in _ID:
            if _has(request, name):
                _id(name, getattr(request, name))
        for name in _ID_LISTS:
            if _has(request, name):
                ids = getattr(request, name)  # a repeated field or a map: ids are its keys
                _count(name, ids, MAX_IDS)
                for text in ids:
                    _id(name, text)
        for name in _NAMES:
            if _has(request, name):
                check_string(name, getattr(request, name), MAX_NAME_BYTES)
        for name in _NAME_LISTS:
            if _has(request, name):
                names = getattr(request, name)
                _count(name, names, MAX_MODULES)
                for text in names:
                    check_string(name, text, MAX_NAME_BYTES)
        if _has(request, "equals"):
            _count("equals", request.equals, MAX_EQUALS)
            for key, value in request.equals.items():
                check_string("equals (attribute name)", key, MAX_NAME_BYTES)
                check_string("equals (value)", value, MAX_VALUE_BYTES)
    except LimitExceeded as e:
        raise InvalidArgument(str(e)) from e


def message(text: str) -> str:
    """``text`` cut to MAX_MESSAGE_BYTES of UTF-8 (a safety net: messages quote prefixes)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= MAX_MESSAGE_BYTES:
        return text
    return data[: MAX_MESSAGE_BYTES - 3].decode("utf-8", "ignore") + "..."
