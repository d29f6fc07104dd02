"""The block format of ``CALL sparkprov.write($blocks, $edges, $theta)``: the contract between
ingest's Python side and its Neo4j procedure (neo4j_plugin, package ``io.sparkprov.plugin.write``).

:func:`sparkprov.events.decode` builds these blocks from a batch, ``ingest_service.store`` sends
them, one flush per call, and the procedure parses each into a Java record of the same fields
(``NodeBlock`` / ``EdgeBlock`` / ``MemberBlock`` in ``io.sparkprov.plugin.write``), refusing a
malformed one with a message that names the block and the field. Both sides test against one
example payload, ``neo4j_plugin/src/test/resources/write-payload.json`` (tests/unit/test_blocks.py
and the procedure's BlockContractTest). A change of fields changes both sides and that file
together.

:func:`check_node_block` and :func:`check_edge_block` validate a value against the TypedDicts at
run time, with errors worded as the procedure's.
"""

from __future__ import annotations

import types
import typing
from typing import Any, TypedDict, TypeVar, Union

__all__ = [
    "MAX_MEMBER_AGGREGATES",
    "EdgeBlock",
    "MalformedBlock",
    "MemberBlock",
    "NodeBlock",
    "check_edge_block",
    "check_member_block",
    "check_node_block",
]


class NodeBlock(TypedDict):
    """The columns of nodes one capture point sent for one run. ``labels`` and ``values`` are
    empty or hold one entry per id; ``attribute_values`` and ``null_rows`` one column per
    attribute name (a null row's value is ``""`` and is not stored)."""

    run: str
    op: str  # an Op name without its OP_ prefix: TOKEN, PLUS, ...
    ids: list[int]  # signed 64-bit node ids
    label: str  # every node's label when ``labels`` is empty
    labels: list[str]
    relation: str | None  # None: the rows belong to no named relation
    values: list[str]
    shared: bool  # module state: stored once, owned by the first run that stores it
    split: list[str]  # the split path, coarse to fine, at most 3 names
    attribute_names: list[str]
    attribute_values: list[list[str]]
    null_rows: list[list[int]]


class EdgeBlock(TypedDict):
    """Edge k derives ``dst[k]`` from ``src[k]``; both are node ids of ``run``."""

    run: str
    src: list[int]
    dst: list[int]


class MemberBlock(TypedDict):
    """Group members of one capture point, stored compactly (docs/graph-schema.md, "Group
    members"): member ``members[k]`` of group ``groups[k]`` (the group's DELTA row) becomes one
    DERIVES edge ``members[k] -> groups[k]`` carrying the member's aggregated values; its TENSOR
    and VALUE nodes are derived by readers (``sparkprov.derived``), never stored. ``pairs[k]``
    is the member's pair id (``MemberColumns.pairs``), by which a derived id is looked up.
    ``values`` and ``null_rows`` hold ``aggregates`` columns: one text per member (``""`` where
    null) and the positions whose value is null. Where the members are a join's rows that
    nothing else sent (docs/graph-schema.md, "A join's rows folded into their member edges"),
    ``lefts[k]`` and ``partners[k]`` are member ``k``'s left and right parent and ``members[k]``
    its TIMES id (of split path ``split``, the block's); else both are empty."""

    run: str
    group_key: str
    members: list[int]
    groups: list[int]
    pairs: list[int]
    aggregates: int
    values: list[list[str]]
    null_rows: list[list[int]]
    lefts: list[int]
    partners: list[int]
    split: list[str]


class MalformedBlock(ValueError):
    """A value that does not follow the contract; the message names the block and the field."""


# The most aggregated columns a member block may have (the procedure keeps a member's null columns
# as one 64-bit mask); members of an aggregation with more are stored expanded.
MAX_MEMBER_AGGREGATES = 64

_Block = TypeVar("_Block", NodeBlock, EdgeBlock, MemberBlock)


def check_node_block(value: object, position: int = 0) -> NodeBlock:
    """``value`` as a :class:`NodeBlock` (the same object), or :class:`MalformedBlock`."""
    block = _check(NodeBlock, value, f"node block {position}")
    for name, entries in (("labels", block["labels"]), ("values", block["values"])):
        if entries and len(entries) != len(block["ids"]):
            raise MalformedBlock(
                f"node block {position}: field '{name}' has {len(entries)} entries for "
                f"{len(block['ids'])} ids"
            )
    names = len(block["attribute_names"])
    columns = (("attribute_values", block["attribute_values"]), ("null_rows", block["null_rows"]))
    for name, column in columns:
        if len(column) != names:
            raise MalformedBlock(
                f"node block {position}: field '{name}' has {len(column)} columns for "
                f"{names} attribute names"
            )
    for a, values in enumerate(block["attribute_values"]):
        if len(values) != len(block["ids"]):
            raise MalformedBlock(
                f"node block {position}: field 'attribute_values[{a}]' has {len(values)} values "
                f"for {len(block['ids'])} ids"
            )
    return block


def check_edge_block(value: object, position: int = 0) -> EdgeBlock:
    """``value`` as an :class:`EdgeBlock` (the same object), or :class:`MalformedBlock`."""
    block = _check(EdgeBlock, value, f"edge block {position}")
    if len(block["src"]) != len(block["dst"]):
        raise MalformedBlock(
            f"edge block {position}: field 'dst' has {len(block['dst'])} ids for "
            f"{len(block['src'])} in src"
        )
    return block


def check_member_block(value: object, position: int = 0) -> MemberBlock:
    """``value`` as a :class:`MemberBlock` (the same object), or :class:`MalformedBlock`."""
    where = f"member block {position}"
    block = _check(MemberBlock, value, where)
    n = len(block["members"])
    for name in ("groups", "pairs"):
        ids: list[int] = block[name]
        if len(ids) != n:
            raise MalformedBlock(f"{where}: field '{name}' has {len(ids)} ids for {n} members")
    for name in ("lefts", "partners"):
        parents: list[int] = block[name]  # type: ignore[literal-required]
        if parents and len(parents) != n:
            raise MalformedBlock(f"{where}: field '{name}' has {len(parents)} ids for {n} members")
    if len(block["lefts"]) != len(block["partners"]):
        raise MalformedBlock(f"{where}: fields 'lefts' and 'partners' differ in length")
    if not block["group_key"]:
        raise MalformedBlock(f"{where}: field 'group_key' is empty")
    if not 0 <= block["aggregates"] <= MAX_MEMBER_AGGREGATES:
        raise MalformedBlock(
            f"{where}: field 'aggregates' is {block['aggregates']}, must be 0 to "
            f"{MAX_MEMBER_AGGREGATES}"
        )
    for name in ("values", "null_rows"):
        columns: list[list[Any]] = block[name]  # type: ignore[literal-required]
        if len(columns) != block["aggregates"]:
            raise MalformedBlock(
                f"{where}: field '{name}' has {len(columns)} columns for "
                f"{block['aggregates']} aggregates"
            )
    for i, column in enumerate(block["values"]):
        if len(column) != n:
            raise MalformedBlock(
                f"{where}: field 'values[{i}]' has {len(column)} values for {n} members"
            )
    for i, rows in enumerate(block["null_rows"]):
        if any(not 0 <= r < n for r in rows):
            raise MalformedBlock(f"{where}: field 'null_rows[{i}]' has a row out of range")
    return block


def _check(kind: type[_Block], value: object, where: str) -> _Block:
    if not isinstance(value, dict):
        raise MalformedBlock(f"{where} must be a dict, got {type(value).__name__}")
    hints = typing.get_type_hints(kind)
    for name, hint in hints.items():
        if name not in value:
            raise MalformedBlock(f"{where}: field '{name}' is missing")
        _check_value(value[name], hint, where, name)
    extra = sorted(set(value) - set(hints))
    if extra:
        raise MalformedBlock(f"{where}: unknown fields {extra}")
    return typing.cast(_Block, value)


_NAMES = {str: "a string", int: "an integer", bool: "a boolean", list: "a list"}


def _check_value(value: object, hint: Any, where: str, field: str) -> None:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return
        hint = next(option for option in options if option is not type(None))
        origin = typing.get_origin(hint)
    expected = origin or hint
    # bool is an int in Python, never in the contract (nor in Java).
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        got = "None" if value is None else type(value).__name__
        raise MalformedBlock(f"{where}: field '{field}' must be {_NAMES[expected]}, got {got}")
    if expected is int and not -(2**63) <= typing.cast(int, value) < 2**63:
        raise MalformedBlock(f"{where}: field '{field}' is out of the signed 64-bit range")
    if origin is list:
        (item,) = typing.get_args(hint)
        for i, element in enumerate(typing.cast(list[object], value)):
            _check_value(element, item, where, f"{field}[{i}]")
