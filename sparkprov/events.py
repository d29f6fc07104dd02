"""Lineage events on the wire: the one adapter between ``sparkprov.v1.lineage_pb2`` and Python.

The capture agent encodes with :func:`encode_batch`, :func:`encode_run_started` and
:func:`encode_run_complete`; the ingest service decodes with :func:`decode`, which validates
everything it returns and raises :class:`MalformedEvent` (with a short machine-readable reason)
for anything it cannot store. Decoded batches are plain rows ready for ``UNWIND``.

Group members travel compact (:class:`MemberColumns`, a ``MemberBlock`` on the wire): the decoder
expands each into the TENSOR and VALUE node blocks and edges it stands for
(``sparkprov.derived``), so a decoded :class:`Batch` holds the same blocks and edges whether they
were sent expanded or compact.

Both sides hold every string and count to ``sparkprov.limits``: the encoders raise
``LimitExceeded`` (a ValueError naming the field and the limit) before anything is sent, and
:func:`decode` refuses such an event with reason ``limit:<field>``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from sparkprov import limits
from sparkprov.blocks import MAX_MEMBER_AGGREGATES, EdgeBlock, MemberBlock, NodeBlock
from sparkprov.derived import MemberColumns, derive, position_labels, xxhash64_longs
from sparkprov.limits import LimitExceeded
from sparkprov.v1 import lineage_pb2
from sparkprov.values import string_column_texts
from sparkprov.workflow import Operator, WorkflowDag

__all__ = [
    "ATTRIBUTE_PREFIX",
    "MAX_EVENT_BYTES",
    "MAX_SPLIT_DEPTH",
    "OP_NAMES",
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "Batch",
    "EdgeColumns",
    "MalformedEvent",
    "MemberColumns",
    "NodeColumns",
    "RunComplete",
    "SourceFiles",
    "source_files_key",
    "source_masks_key",
    "SOURCE_ROW_BITS",
    "ReusedResult",
    "RunStarted",
    "decode",
    "derived_ids",
    "encode_batch",
    "encode_run_complete",
    "encode_run_started",
    "member_columns",
    "op_number",
    "truncate_values",
]

# 2: batches may carry member blocks (LineageBatch.members). A reader of version 1 would skip
# them silently and its run would never complete; it dead-letters version 2 instead (reason
# "schema_version"), so an old ingest loses nothing: the events wait in the DLQ for a replay.
# 3: node blocks may carry their ids as the inputs they derive from (NodeBlock.derived): sent by
# the JVM taps; the encoders here still write explicit ids (version 2).
SCHEMA_VERSION = 2
# What this reader decodes: versions 1 (no member blocks) and 2 too, from older capture agents.
# 4: value columns may hold numbers (StringColumn.longs, doubles), written as text on reading
# (sparkprov.values): sent by the JVM taps.
# 5: value columns may hold dates and decimals as numbers (StringColumn.dates, unscaled).
# 6: member blocks may carry their join's rows (MemberBlock.join_rows).
# 7: value columns may carry their integers as differences (StringColumn.deltas), and member
# blocks their groups as a dictionary (MemberBlock.group_ids, group_index).
# 8: a semi or an anti join's rows may travel as their left rows and matches (DerivedIds'
# match fields), the reader deriving their ids, PLUS nodes, values and edges.
# 9: aggregates of one input may share its member value column (MemberBlock.value_of).
READABLE_SCHEMA_VERSIONS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9})
MAX_EVENT_BYTES = 8 * 1024 * 1024
# Levels of split paths (split, sub-split, sub-sub-split): connected sets are kept per level.
# lineage.proto's SplitDepth carries it, for the plugin's Schema.LEVELS too.
MAX_SPLIT_DEPTH: int = lineage_pb2.SPLIT_DEPTH_MAX
# Row attributes are stored as node properties with this prefix, so they never clash with ours.
ATTRIBUTE_PREFIX = "a_"

OP_NAMES: dict[int, str] = {
    value: name.removeprefix("OP_")
    for name, value in lineage_pb2.Op.items()
    if value != lineage_pb2.OP_UNSPECIFIED
}
_OP_BY_NAME: dict[str, Any] = {name: value for value, name in OP_NAMES.items()}


def op_number(name: str) -> int:
    """The proto enum value of an op name such as ``"TOKEN"`` (0 when unknown)."""
    return int(_OP_BY_NAME.get(name, lineage_pb2.OP_UNSPECIFIED))


class MalformedEvent(ValueError):
    """An event that cannot be stored; ``reason`` is a short code for the dead-letter topic."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# Id columns: Python ints, or an int64 numpy array (written without a Python int per id).
Ids = Sequence[int] | np.ndarray


@dataclass(frozen=True)
class NodeColumns:
    """Nodes of one op, column by column (as a capture point produces them)."""

    op: str
    ids: Ids
    label: str = ""
    labels: Sequence[str] = ()
    relation: str = ""
    attributes: Mapping[str, Sequence[str | None]] = field(default_factory=dict)
    values: Sequence[str] = ()
    shared: bool = False
    split: Sequence[str] = ()


@dataclass(frozen=True)
class EdgeColumns:
    src: Ids
    dst: Ids


@dataclass(frozen=True)
class Batch:
    """A decoded, validated batch, still column by column (the ingest store passes the columns
    to Neo4j as they are; :meth:`rows` gives one dict per node for readers that want rows)."""

    run_id: str
    workflow: str
    tap: str
    partition: int
    sequence: int
    # The node blocks and the edge columns, as sparkprov.write takes them (sparkprov.blocks).
    blocks: list[NodeBlock]
    edges: EdgeBlock
    # Group members, compact (delta groups only): each stands for its member edge m -> g and
    # its derived TENSOR and VALUE nodes and edges (sparkprov.derived), which are stored as one
    # member edge each (:func:`member_block`), never as nodes.
    members: list[MemberColumns] = field(default_factory=list)

    @property
    def node_count(self) -> int:
        """Records of node blocks, plus one per member (its member edge)."""
        return sum(len(b["ids"]) for b in self.blocks) + sum(len(m.members) for m in self.members)

    @property
    def edge_count(self) -> int:
        return len(self.edges["src"])

    def expanded(self) -> Batch:
        """The same batch with its members expanded into the TENSOR and VALUE node blocks and
        the edges they stand for (the logical graph, as readers see it)."""
        blocks = list(self.blocks)
        edges: EdgeBlock = {
            "run": self.run_id,
            "src": list(self.edges["src"]),
            "dst": list(self.edges["dst"]),
        }
        for m in self.members:
            _expand_into(self.run_id, m, blocks, edges)
        return replace(self, blocks=blocks, edges=edges, members=[])

    def rows(self, only: Container[int] | None = None) -> list[dict[str, Any]]:
        """One dict per node (per node of ``only``, if given): id, run, op, label, relation,
        value, shared, split and props (the non-null attributes, prefixed)."""
        out = []
        for b in self.blocks:
            names = [ATTRIBUTE_PREFIX + n for n in b["attribute_names"]]
            nulls = [set(rows) for rows in b["null_rows"]]
            for i, node_id in enumerate(b["ids"]):
                if only is not None and node_id not in only:
                    continue
                out.append(
                    {
                        "id": node_id,
                        "run": b["run"],
                        "op": b["op"],
                        "label": b["labels"][i] if b["labels"] else b["label"],
                        "relation": b["relation"],
                        "value": b["values"][i] if b["values"] else None,
                        "shared": b["shared"],
                        "split": b["split"],
                        "props": {
                            name: column[i]
                            for name, column, null in zip(
                                names, b["attribute_values"], nulls, strict=True
                            )
                            if i not in null
                        },
                    }
                )
        return out


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    workflow: str
    started_unix_ms: int
    application_id: str


@dataclass(frozen=True)
class ReusedResult:
    """A sink a run reused instead of computing: the earlier run ``run_id`` stored it under
    ``version``, the canonical id of the sink's sub-DAG (capture_agent.reuse)."""

    sink: str
    version: str
    run_id: str


@dataclass(frozen=True)
class SourceFiles:
    """A source whose rows are identified by file and row index (capture_agent.sources): its
    TOKEN label ``<relation>#<i>.<row>`` names row ``row`` of ``files[i]``."""

    relation: str
    files: tuple[str, ...]
    # The TOKEN id masks of its capture points (a row's id: its position XOR one of them);
    # empty from writers before them or without the JVM taps.
    masks: tuple[int, ...] = ()


def source_files_key(relation: str) -> str:
    """The ``(:Run)`` property that lists a source's files in the store (docs/graph-schema.md):
    ``files_<relation>``."""
    return f"files_{relation}"


# A file source row's position: its file's index in the source's sorted list << SOURCE_ROW_BITS |
# its row index in the file (io.sparkprov.capture.FileOrdinals.ROW_BITS; capture_agent.sources).
SOURCE_ROW_BITS = 33


def source_masks_key(relation: str) -> str:
    """The ``(:Run)`` property that lists a file source's TOKEN id masks (docs/graph-schema.md):
    ``masks_<relation>``."""
    return f"masks_{relation}"


@dataclass(frozen=True)
class RunComplete:
    run_id: str
    workflow: str
    node_count: int
    edge_count: int
    failed: bool
    error: str
    finished_unix_ms: int
    version: WorkflowDag | None = None  # None from writers that predate versions
    reuses: tuple[ReusedResult, ...] = ()
    source_files: tuple[SourceFiles, ...] = ()


Event = Batch | RunStarted | RunComplete


def _envelope(run_id: str, workflow: str) -> lineage_pb2.LineageEvent:
    return lineage_pb2.LineageEvent(schema_version=SCHEMA_VERSION, run_id=run_id, workflow=workflow)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): key byte, length, payload."""
    return bytes((tag,)) + _varint(len(payload)) + payload


def _packed_fixed64(tag: int, values: Ids) -> bytes:
    """A packed ``repeated sfixed64`` field, written straight from an int64 array (protobuf's
    wire format is little-endian fixed 8 bytes per value): no Python int per value."""
    if len(values) == 0:
        return b""
    return _field(tag, np.asarray(values, dtype="<i8").tobytes())


def _key(message: Any, field: str, wire_type: int = 2) -> int:
    """A field's key (number << 3 | wire type) from the generated module: the numbers are
    lineage.proto's, never typed here. One byte (a field number up to 15), as ``_field`` writes."""
    key = int(message.DESCRIPTOR.fields_by_name[field].number) << 3 | wire_type
    assert key < 0x80, f"{message.DESCRIPTOR.name}.{field}: a key of more than one byte"
    return key


# The fields written by hand (length-delimited, but for the op's varint).
_KEY_BATCH = _key(lineage_pb2.LineageEvent, "batch")
_KEY_NODES = _key(lineage_pb2.LineageBatch, "nodes")
_KEY_EDGES = _key(lineage_pb2.LineageBatch, "edges")
_KEY_OP = _key(lineage_pb2.NodeBlock, "op", wire_type=0)
_KEY_IDS = _key(lineage_pb2.NodeBlock, "ids")
_KEY_SRC = _key(lineage_pb2.EdgeBlock, "src")
_KEY_DST = _key(lineage_pb2.EdgeBlock, "dst")
_KEY_MEMBERS = _key(lineage_pb2.LineageBatch, "members")
_KEY_MEMBER_IDS = _key(lineage_pb2.MemberBlock, "members")
_KEY_GROUP_IDS = _key(lineage_pb2.MemberBlock, "groups")


def _string_column(column: lineage_pb2.StringColumn, values: Sequence[str | None]) -> None:
    """Fill a StringColumn: nulls as "" plus their rows."""
    if None in values:
        column.values.extend("" if v is None else v for v in values)
        column.null_rows.extend(i for i, v in enumerate(values) if v is None)
    else:
        column.values.extend(values)  # type: ignore[arg-type]


def _node_block(cols: NodeColumns) -> bytes:
    limits.check_block(
        ids=len(cols.ids),
        label=cols.label,
        labels=cols.labels,
        relation=cols.relation,
        attribute_names=list(cols.attributes),
        attribute_columns=cols.attributes.values(),
        values=cols.values,
        split=cols.split,
    )
    block = lineage_pb2.NodeBlock()
    block.label = cols.label
    block.labels.extend(cols.labels)
    block.relation = cols.relation
    for name, values in cols.attributes.items():
        block.attribute_names.append(name)
        _string_column(block.attribute_values.add(), values)
    block.values.extend(cols.values)
    block.shared = cols.shared
    block.split.extend(cols.split)
    op = _OP_BY_NAME[cols.op]
    # Fields in number order, as protobuf itself writes them: op (1), ids (2), then the rest.
    head = (bytes((_KEY_OP,)) + _varint(op)) if op else b""
    return head + _packed_fixed64(_KEY_IDS, cols.ids) + block.SerializeToString()


def _member_block(cols: MemberColumns) -> bytes:
    limits.check_members(
        ids=len(cols.members),
        group_key=cols.group_key,
        aggregates=cols.aggregates,
        value_columns=cols.values,
        split=cols.split,
    )
    n = len(cols.members)
    if len(cols.groups) != n or any(len(column) != n for column in cols.values):
        raise ValueError(f"member block of {n} members with groups or values of other lengths")
    block = lineage_pb2.MemberBlock(
        group_key=cols.group_key, delta=cols.delta, aggregates=cols.aggregates
    )
    for values in cols.values:
        _string_column(block.values.add(), values)
    block.split.extend(cols.split)
    # Fields in number order: the id columns (1, 2) from the arrays' bytes, then the rest.
    ids = _packed_fixed64(_KEY_MEMBER_IDS, cols.members)
    return ids + _packed_fixed64(_KEY_GROUP_IDS, cols.groups) + block.SerializeToString()


def truncate_values(
    nodes: Sequence[NodeColumns], members: Sequence[MemberColumns] = ()
) -> tuple[list[NodeColumns], list[MemberColumns]]:
    """The blocks with every text that comes from data (labels, values, attribute values,
    members' values) at most ``MAX_TEXT_BYTES``, cut and marked by ``limits.truncate``: a value
    of any size never fails a captured job (docs/capture.md, "Values of any size"). Blocks whose
    texts all fit are returned as they are."""
    cap = limits.truncate_all
    out_nodes = []
    for b in nodes:
        labels, values = cap(b.labels), cap(b.values)
        attributes = {name: cap(column) for name, column in b.attributes.items()}
        changed = (
            labels is not b.labels
            or values is not b.values
            or any(attributes[name] is not column for name, column in b.attributes.items())
        )
        out_nodes.append(
            replace(b, labels=labels, values=values, attributes=attributes) if changed else b
        )
    out_members = []
    for m in members:
        columns = [cap(column) for column in m.values]
        changed = any(c is not o for c, o in zip(columns, m.values, strict=True))
        out_members.append(replace(m, values=columns) if changed else m)
    return out_nodes, out_members


def encode_batch(
    run_id: str,
    workflow: str,
    tap: str,
    partition: int,
    sequence: int,
    nodes: Sequence[NodeColumns],
    edges: EdgeColumns | None,
    *,
    members: Sequence[MemberColumns] = (),
) -> bytes:
    """One batch event. Ids and edge ends may be lists or int64 numpy arrays; the packed id
    columns, the bulk of a batch, are written from the arrays' bytes. The bytes are those
    protobuf's own serializer writes for the same message. ``members`` travel compact; the batch
    limits hold for their expansion. Raises ``LimitExceeded`` for any value over its limit
    (``sparkprov.limits``)."""
    limits.check_envelope(run_id, workflow)
    limits.check_batch(
        tap,
        len(nodes) + sum(m.block_count for m in members),
        (len(edges.src) if edges is not None else 0) + sum(m.edge_count for m in members),
    )
    batch = lineage_pb2.LineageBatch(tap=tap, partition=partition, sequence=sequence)
    parts = [batch.SerializeToString()]
    for cols in nodes:
        parts.append(_field(_KEY_NODES, _node_block(cols)))
    if edges is not None:
        ends = _packed_fixed64(_KEY_SRC, edges.src) + _packed_fixed64(_KEY_DST, edges.dst)
        parts.append(_field(_KEY_EDGES, ends))
    for m in members:
        parts.append(_field(_KEY_MEMBERS, _member_block(m)))
    body = b"".join(parts)
    return _envelope(run_id, workflow).SerializeToString() + _field(_KEY_BATCH, body)


def encode_run_started(
    run_id: str, workflow: str, started_unix_ms: int, application_id: str
) -> bytes:
    limits.check_envelope(run_id, workflow)
    limits.check_string("application_id", application_id, limits.MAX_NAME_BYTES)
    event = _envelope(run_id, workflow)
    event.run_started.started_unix_ms = started_unix_ms
    event.run_started.application_id = application_id
    return event.SerializeToString()


def encode_run_complete(
    run_id: str,
    workflow: str,
    node_count: int,
    edge_count: int,
    *,
    failed: bool = False,
    error: str = "",
    finished_unix_ms: int = 0,
    version: WorkflowDag | None = None,
    reuses: Sequence[ReusedResult] = (),
    source_files: Sequence[SourceFiles] = (),
) -> bytes:
    limits.check_envelope(run_id, workflow)
    limits.check_string("error", error, limits.MAX_TEXT_BYTES)
    for reuse in reuses:
        _check_reuse(reuse)
    for source in source_files:
        _check_source_files(source)
    event = _envelope(run_id, workflow)
    done = event.run_complete
    done.node_count = node_count
    done.edge_count = edge_count
    done.failed = failed
    done.error = error
    done.finished_unix_ms = finished_unix_ms
    if version is not None:
        _version_message(version, done.version)
    for reuse in reuses:
        done.reuses.add(sink=reuse.sink, version=reuse.version, run_id=reuse.run_id)
    for source in source_files:
        done.source_files.add(relation=source.relation, files=source.files, masks=source.masks)
    return event.SerializeToString()


def _check_source_files(source: SourceFiles) -> None:
    """A source's file list names a relation and at most MAX_SOURCE_FILES files, each a text
    within the limits."""
    if not source.relation or not source.files:
        raise MalformedEvent("bad_source_files", "a source's file list needs a relation and files")
    limits.check_string("source_files.relation", source.relation, limits.MAX_NAME_BYTES)
    if len(source.files) > limits.MAX_SOURCE_FILES:
        raise MalformedEvent(
            "bad_source_files",
            f"source {source.relation} lists {len(source.files)} files, over the limit of "
            f"{limits.MAX_SOURCE_FILES}",
        )
    for file in source.files:
        limits.check_string("source_files.files", file, limits.MAX_TEXT_BYTES)
    if len(source.masks) > limits.MAX_SOURCE_FILES or any(
        not -(2**63) <= m < 2**63 for m in source.masks
    ):
        raise MalformedEvent(
            "bad_source_files",
            f"source {source.relation}: at most {limits.MAX_SOURCE_FILES} masks, each a 64-bit id",
        )


def _check_reuse(reuse: ReusedResult) -> None:
    """A reuse names a relation, a version id and a run: each within the limits, none empty."""
    if not (reuse.sink and reuse.version and reuse.run_id):
        raise MalformedEvent("bad_reuse", "a reused result needs a sink, a version and a run id")
    limits.check_string("reuse.sink", reuse.sink, limits.MAX_NAME_BYTES)
    limits.check_string("reuse.version", reuse.version, limits.MAX_NAME_BYTES)
    limits.check_string("reuse.run_id", reuse.run_id, limits.MAX_NAME_BYTES)


def _version_message(dag: WorkflowDag, out: lineage_pb2.WorkflowVersion) -> None:
    out.version_id = dag.version_id
    for op in dag.ops:
        o = out.operators.add(id=op.id, kind=op.kind, inputs=list(op.inputs))
        o.params.update(dict(op.params))
        for name, type_ in op.columns:
            o.columns.add(name=name, type=type_)
    out.sinks.update(dict(dag.sinks))


def _version_of(message: lineage_pb2.WorkflowVersion) -> WorkflowDag:
    """The DAG a marker carries, checked: its version id is the hash of what it holds."""
    dag = WorkflowDag(
        tuple(
            Operator(
                id=o.id,
                kind=o.kind,
                params=tuple(sorted(o.params.items())),
                inputs=tuple(o.inputs),
                columns=tuple((c.name, c.type) for c in o.columns),
            )
            for o in message.operators
        ),
        tuple(sorted(message.sinks.items())),
    )
    known = {o.id for o in dag.operators}
    dangling = [i for o in dag.operators for i in o.inputs if i not in known]
    dangling += [op for _, op in dag.sinks if op not in known]
    if dangling:
        raise MalformedEvent("bad_version", f"operators reference unknown ids {dangling[:3]}")
    if dag.version_id != message.version_id:
        raise MalformedEvent("bad_version", "version_id is not the hash of the operator DAG")
    return dag


def _reuse_of(message: lineage_pb2.ReusedResult) -> ReusedResult:
    reuse = ReusedResult(message.sink, message.version, message.run_id)
    _check_reuse(reuse)
    return reuse


def _source_files_of(message: lineage_pb2.SourceFiles) -> SourceFiles:
    source = SourceFiles(message.relation, tuple(message.files), tuple(message.masks))
    _check_source_files(source)
    return source


def decode(data: bytes | None) -> Event:
    """Parse and validate one Kafka message value."""
    if data is None:
        raise MalformedEvent("empty", "message has no value")
    if len(data) > MAX_EVENT_BYTES:
        raise MalformedEvent("oversized", f"{len(data)} bytes > {MAX_EVENT_BYTES}")
    event = lineage_pb2.LineageEvent()
    try:
        event.ParseFromString(data)
    except DecodeError as e:
        raise MalformedEvent("undecodable", str(e) or "not a LineageEvent") from e
    if event.schema_version not in READABLE_SCHEMA_VERSIONS:
        raise MalformedEvent(
            "schema_version",
            f"got {event.schema_version}, this reader knows "
            f"{', '.join(map(str, sorted(READABLE_SCHEMA_VERSIONS)))}",
        )
    if not event.run_id:
        raise MalformedEvent("no_run_id", "event carries no run_id")
    try:
        return _decode_body(event)
    except LimitExceeded as e:
        raise MalformedEvent(f"limit:{e.field}", str(e)) from e


def _decode_body(event: lineage_pb2.LineageEvent) -> Event:
    limits.check_envelope(event.run_id, event.workflow)
    body = event.WhichOneof("body")
    if body == "run_started":
        s = event.run_started
        limits.check_string("application_id", s.application_id, limits.MAX_NAME_BYTES)
        return RunStarted(event.run_id, event.workflow, s.started_unix_ms, s.application_id)
    if body == "run_complete":
        c = event.run_complete
        if c.node_count < 0 or c.edge_count < 0:
            raise MalformedEvent("bad_counts", "negative node or edge count")
        limits.check_string("error", c.error, limits.MAX_TEXT_BYTES)
        return RunComplete(
            event.run_id,
            event.workflow,
            c.node_count,
            c.edge_count,
            c.failed,
            c.error,
            c.finished_unix_ms,
            _version_of(c.version) if c.HasField("version") else None,
            tuple(_reuse_of(r) for r in c.reuses),
            tuple(_source_files_of(f) for f in c.source_files),
        )
    if body == "batch":
        return _decode_batch(event)
    raise MalformedEvent("no_body", "event has no batch, run_started or run_complete")


def _decode_batch(event: lineage_pb2.LineageEvent) -> Batch:
    pb = event.batch
    run_id = event.run_id
    limits.check_batch(pb.tap, len(pb.nodes) + len(pb.members), len(pb.edges.src))
    blocks: list[NodeBlock] = []
    derived_src: list[np.ndarray] = []
    derived_dst: list[np.ndarray] = []
    for block in pb.nodes:
        op = OP_NAMES.get(block.op)
        if op is None:
            raise MalformedEvent("bad_op", f"unknown op {block.op} in tap {limits.quote(pb.tap)}")
        ids: list[int] = list(block.ids)
        labels: list[str] = list(block.labels)
        values: list[str] = list(block.values)
        plus: list[int] = []
        if block.HasField("derived"):
            if ids:
                raise MalformedEvent("ragged", "a node block has both ids and derived ids")
            derived = derived_ids(block.derived, block.relation, block.op)
            ids = derived.ids.tolist()
            if derived.labels:
                if labels:
                    raise MalformedEvent("ragged", "a node block has labels and positions")
                labels = derived.labels
            if derived.values:
                if block.values:
                    raise MalformedEvent("ragged", "a node block has values and matches")
                values = derived.values
            plus = derived.plus.tolist()
            derived_src.append(derived.src)
            derived_dst.append(derived.dst)
        n = len(ids)
        attribute_columns = [_texts(column) for column in block.attribute_values]
        limits.check_block(
            ids=n,
            label=block.label,
            labels=labels,
            relation=block.relation,
            attribute_names=block.attribute_names,
            attribute_columns=attribute_columns,
            values=values,
            split=block.split,
        )
        for name, entries in (("labels", labels), ("values", values)):
            if entries and len(entries) != n:
                raise MalformedEvent("ragged", f"{name} has {len(entries)} entries for {n} ids")
        if len(block.attribute_names) != len(block.attribute_values):
            raise MalformedEvent("ragged", "attribute names and columns differ in number")
        for name, column, texts in zip(
            block.attribute_names, block.attribute_values, attribute_columns, strict=True
        ):
            if len(texts) != n:
                raise MalformedEvent(
                    "ragged",
                    f"attribute {limits.quote(name)} has {len(texts)} values for {n} ids",
                )
            if any(r >= n for r in column.null_rows):
                raise MalformedEvent(
                    "ragged", f"attribute {limits.quote(name)} has a null row past {n}"
                )
        _check_split(block.split)
        blocks.append(
            {
                "run": run_id,
                "op": op,
                "ids": ids,
                "label": block.label,
                "labels": labels,
                "relation": block.relation or None,
                "values": values,
                "shared": block.shared,
                "split": list(block.split),
                "attribute_names": list(block.attribute_names),
                "attribute_values": attribute_columns,
                "null_rows": [list(c.null_rows) for c in block.attribute_values],
            }
        )
        if plus:  # a semi join's sums of matches (DerivedIds with matches)
            blocks.append(_plus_block(run_id, plus, block.split))
    src, dst = pb.edges.src, pb.edges.dst
    if len(src) != len(dst):
        raise MalformedEvent("ragged", f"{len(src)} edge sources for {len(dst)} destinations")
    edges: EdgeBlock = {"run": run_id, "src": list(src), "dst": list(dst)}
    for more_src, more_dst in zip(derived_src, derived_dst, strict=True):
        edges["src"] += more_src.tolist()
        edges["dst"] += more_dst.tolist()
    members = [member_columns(block) for block in pb.members]
    limits.check_batch(
        pb.tap,
        len(blocks) + sum(m.block_count for m in members),
        len(edges["src"]) + sum(m.edge_count for m in members),
    )
    compact = []
    for m in members:
        if m.delta and 0 < m.aggregates <= MAX_MEMBER_AGGREGATES:
            compact.append(m)
        else:
            # Window partitions have no DELTA row to hang members on, and members without an
            # aggregated column (distinct, set operations) derive no node: stored as edges.
            _expand_into(run_id, m, blocks, edges)
    return Batch(run_id, event.workflow, pb.tap, pb.partition, pb.sequence, blocks, edges, compact)


@dataclass(frozen=True)
class _Derived:
    ids: np.ndarray
    labels: list[str]
    src: np.ndarray
    dst: np.ndarray
    # A join's pairs: each row's left and right id (0 where that side is null).
    left: np.ndarray | None = None
    right: np.ndarray | None = None
    # A semi join's rows with matches: the PLUS nodes of its rows with more than one (a node
    # block after this one); an anti join's: each EXCLUDED node's value, its match's id.
    plus: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values: list[str] = field(default_factory=list)


_NO_IDS = np.zeros(0, dtype=np.int64)


def derived_ids(d: lineage_pb2.DerivedIds, relation: str | None, op: int = 0) -> _Derived:
    """The ids (and source labels unless ``relation`` is None, join edges) a DerivedIds stands
    for (lineage.proto); ``op``, the block's, says what its matches make, if it has any."""
    positional = len(d.position_deltas) > 0
    paired = any(len(c) for c in (d.left, d.right, d.left_deltas, d.right_deltas))
    parented = len(d.parents) > 0 or len(d.parent_deltas) > 0
    if positional + paired + parented != 1:
        raise MalformedEvent("bad_derived", "derived ids need one of positions, pairs, parents")
    limits.check_count(
        "ids_per_block",
        max(len(c) for c in (d.position_deltas, d.left, d.left_deltas, d.parents, d.parent_deltas)),
        limits.MAX_IDS_PER_BLOCK,
    )
    if parented:
        if d.left_null_rows or d.right_null_rows:
            raise MalformedEvent("bad_derived", "parents take no null rows")
        parents = _side(d.parents, d.parent_deltas, d.parent_mask, "parent")
        ids = xxhash64_longs(d.seed, parents)
        if len(d.match_counts) or len(d.matches) or len(d.match_deltas):
            return _matched(d, op, parents, ids)
        return _Derived(ids, [], parents, ids)
    if positional:
        if d.left_null_rows or d.right_null_rows:
            raise MalformedEvent("bad_derived", "positions take no null rows")
        positions = _undelta(d.position_deltas)
        if (positions < 0).any():
            raise MalformedEvent("bad_derived", "a position is negative")
        labels = [] if relation is None else position_labels(relation, positions)
        return _Derived(positions ^ np.int64(d.seed), labels, _NO_IDS, _NO_IDS)
    left = _side(d.left, d.left_deltas, d.left_mask, "left")
    right = _side(d.right, d.right_deltas, d.right_mask, "right")
    n = len(left)
    if len(right) != n:
        raise MalformedEvent("ragged", f"derived ids have {n} left and {len(right)} right ids")
    masks = []
    for name, rows in (("left", d.left_null_rows), ("right", d.right_null_rows)):
        mask = np.zeros(n, dtype=bool)
        if len(rows):
            at = np.array(rows, dtype=np.int64)
            if (at >= n).any():
                raise MalformedEvent("ragged", f"derived ids have a {name} null row past {n}")
            mask[at] = True
        masks.append(mask)
    if (masks[0] & masks[1]).any():
        raise MalformedEvent("bad_derived", "a derived id has neither a left nor a right id")
    ids = xxhash64_longs(d.seed, left, right, nulls=masks)
    src = np.concatenate([left[~masks[0]], right[~masks[1]]])
    dst = np.concatenate([ids[~masks[0]], ids[~masks[1]]])
    return _Derived(ids, [], src, dst, left, right)


def _plus_block(run_id: str, ids: list[int], split: Sequence[str]) -> NodeBlock:
    """The PLUS nodes a semi join's derived rows make (label "+", no relation or values)."""
    return {
        "run": run_id,
        "op": "PLUS",
        "ids": ids,
        "label": "+",
        "labels": [],
        "relation": None,
        "values": [],
        "shared": False,
        "split": list(split),
        "attribute_names": [],
        "attribute_values": [],
        "null_rows": [],
    }


def _matched(d: lineage_pb2.DerivedIds, op: int, parents: np.ndarray, ids: np.ndarray) -> _Derived:
    """A semi or an anti join's rows from their left rows (``parents``) and matches
    (lineage.proto's DerivedIds, "With matches"): the edges in the order the proto gives, the
    PLUS ids of a semi join, the values of an anti join's EXCLUDED nodes."""
    n = len(parents)
    counts = (
        np.array(d.match_counts, dtype=np.int64)
        if len(d.match_counts)
        else np.ones(n, dtype=np.int64)
    )
    if len(counts) != n:
        raise MalformedEvent("ragged", f"{len(counts)} match counts for {n} rows")
    if (counts < 1).any():
        raise MalformedEvent("bad_derived", "a semi or anti join's row has no match")
    matches = _side(d.matches, d.match_deltas, d.match_mask, "match")
    if len(matches) != int(counts.sum()):
        raise MalformedEvent(
            "ragged", f"{len(matches)} matches for counts summing to {counts.sum()}"
        )
    single = counts == 1
    if op == lineage_pb2.OP_EXCLUDED:
        if not single.all():
            raise MalformedEvent("bad_derived", "an excluded row has more than one match")
        other = matches != parents  # a row excluded by itself has one edge
        src = np.concatenate([parents, matches[other]])
        dst = np.concatenate([ids, ids[other]])
        return _Derived(ids, [], src, dst, values=[str(m) for m in matches.tolist()])
    if op != lineage_pb2.OP_TIMES:
        raise MalformedEvent("bad_derived", "matches belong to a TIMES or an EXCLUDED block")
    first = matches[np.cumsum(counts) - counts]
    alone = single & (first != parents)  # a row matching itself has one edge
    several = ~single
    plus = derive(ids[several], np.uint64(d.plus_salt % 2**64))
    owner = np.repeat(np.arange(n), counts)
    summed = several[owner]
    plus_of = np.zeros(n, dtype=np.int64)
    plus_of[several] = plus
    src = np.concatenate([parents, first[alone], plus, matches[summed]])
    dst = np.concatenate([ids, ids[alone], ids[several], plus_of[owner[summed]]])
    return _Derived(ids, [], src, dst, plus=plus)


def _side(ids: Sequence[int], deltas: Sequence[int], mask: int, name: str) -> np.ndarray:
    """One side of a join's pairs: its ids, or its positions' deltas and mask (DerivedIds)."""
    if len(ids) and len(deltas):
        raise MalformedEvent("bad_derived", f"the {name} side has both ids and positions")
    if len(deltas):
        return _undelta(deltas) ^ np.int64(mask)
    return np.array(ids, dtype=np.int64)


def _undelta(deltas: Sequence[int]) -> np.ndarray:
    """The values a delta-coded column stands for (the first as it is, then the differences)."""
    with np.errstate(over="ignore"):
        return np.cumsum(np.array(deltas, dtype=np.int64), dtype=np.int64)


def _expand_into(run_id: str, m: MemberColumns, blocks: list[NodeBlock], edges: EdgeBlock) -> None:
    expansion = m.expand()
    for d in expansion.nodes:
        texts = list(d.texts)
        blocks.append(
            {
                "run": run_id,
                "op": d.op,
                "ids": d.ids.tolist(),
                "label": d.label,
                "labels": texts,
                "values": list(texts),
                "relation": None,
                "shared": False,
                "split": list(m.split),
                "attribute_names": [],
                "attribute_values": [],
                "null_rows": [],
            }
        )
    edges["src"] += expansion.src.tolist()
    edges["dst"] += expansion.dst.tolist()


def member_block(run_id: str, m: MemberColumns) -> MemberBlock:
    """The stored form of group members (sparkprov.blocks.MemberBlock)."""
    return {
        "run": run_id,
        "group_key": m.group_key,
        "members": np.asarray(m.members, dtype=np.int64).tolist(),
        "groups": np.asarray(m.groups, dtype=np.int64).tolist(),
        "pairs": m.pairs().tolist(),
        "aggregates": m.aggregates,
        "values": [["" if v is None else v for v in column] for column in m.values],
        "null_rows": [[k for k, v in enumerate(column) if v is None] for column in m.values],
        # A join's rows folded into their member edges (docs/graph-schema.md): each member's
        # left and right parent; empty for other members.
        "lefts": [] if m.lefts is None else np.asarray(m.lefts, dtype=np.int64).tolist(),
        "partners": [] if m.rights is None else np.asarray(m.rights, dtype=np.int64).tolist(),
        "split": list(m.split),
    }


def _texts(column: lineage_pb2.StringColumn) -> list[str]:
    """A value column's entries as text: its texts, or its numbers as Spark writes them."""
    try:
        return string_column_texts(column)
    except ValueError as error:
        raise MalformedEvent("ragged", str(error)) from None


def _check_split(split: Sequence[str]) -> None:
    if len(split) > MAX_SPLIT_DEPTH or any(not part for part in split):
        raise MalformedEvent(
            "bad_split", f"split path of {len(split)} names, at most {MAX_SPLIT_DEPTH} non-empty"
        )


def member_columns(block: lineage_pb2.MemberBlock) -> MemberColumns:
    """A decoded member block, validated (limits, lengths, split), not yet expanded."""
    members = np.array(block.members, dtype=np.int64)
    lefts = rights = None
    if block.HasField("derived_members"):
        if len(members):
            raise MalformedEvent("ragged", "a member block has both members and derived members")
        derived = derived_ids(block.derived_members, None)
        members = derived.ids
        if block.join_rows:
            lefts, rights = _join_rows(block.derived_members, derived)
    elif block.join_rows:
        raise MalformedEvent("bad_derived", "a member block with join rows has no derived pairs")
    n = len(members)
    value_columns = [_texts(column) for column in block.values]
    limits.check_members(
        ids=n,
        group_key=block.group_key,
        aggregates=block.aggregates,
        value_columns=value_columns,
        split=block.split,
    )
    groups = _member_groups(block)
    if len(groups) != n:
        raise MalformedEvent("ragged", f"member block has {len(groups)} groups for {n} ids")
    value_of = _value_of(block)
    distinct: list[list[str | None]] = []
    for column, entries in zip(block.values, value_columns, strict=True):
        if len(entries) != n:
            raise MalformedEvent(
                "ragged", f"member block has a value column of {len(entries)} for {n} ids"
            )
        texts: list[str | None] = list(entries)
        for row in column.null_rows:
            if row >= n:
                raise MalformedEvent("ragged", f"member block has a null row past {n}")
            texts[row] = None
        distinct.append(texts)
    # Aggregates sharing an input share its list: the stored values are the same either way.
    values = [distinct[k] for k in value_of]
    _check_split(block.split)
    return MemberColumns(
        group_key=block.group_key,
        members=members,
        groups=groups,
        delta=block.delta,
        values=values,
        split=list(block.split),
        lefts=lefts,
        rights=rights,
    )


def _value_of(block: lineage_pb2.MemberBlock) -> list[int]:
    """Per aggregated column, the index of its value column: ``value_of`` (schema version 9,
    aggregates of one input sharing its column), or column i for aggregate i."""
    if not len(block.value_of):
        if len(block.values) != block.aggregates:
            raise MalformedEvent(
                "ragged",
                f"member block has {len(block.values)} value columns "
                f"for {block.aggregates} aggregates",
            )
        return list(range(block.aggregates))
    value_of = list(block.value_of)
    if len(value_of) != block.aggregates:
        raise MalformedEvent(
            "ragged",
            f"member block has {len(value_of)} value_of entries for {block.aggregates} aggregates",
        )
    if set(value_of) != set(range(len(block.values))):
        raise MalformedEvent(
            "ragged",
            f"member block's value_of {value_of} does not name each of its "
            f"{len(block.values)} value columns",
        )
    return value_of


def _member_groups(block: lineage_pb2.MemberBlock) -> np.ndarray:
    """Each member's group id: ``groups``, or (schema version 7) ``group_ids`` indexed by
    ``group_index``."""
    if not len(block.group_ids) and not len(block.group_index):
        return np.array(block.groups, dtype=np.int64)
    if len(block.groups):
        raise MalformedEvent("ragged", "a member block has both groups and a group dictionary")
    ids = np.array(block.group_ids, dtype=np.int64)
    index = np.array(block.group_index, dtype=np.int64)
    if len(index) and int(index.max()) >= len(ids):
        raise MalformedEvent(
            "ragged", f"a member block's group index reaches past its {len(ids)} group ids"
        )
    return ids[index]


def _join_rows(d: lineage_pb2.DerivedIds, derived: _Derived) -> tuple[np.ndarray, np.ndarray]:
    """The left and right parents of a member block's join rows: its derived pairs, both sides
    of every row (an inner join's)."""
    if len(d.left_null_rows) or len(d.right_null_rows):
        raise MalformedEvent("bad_derived", "join rows of a member block have a null side")
    if derived.left is None or derived.right is None or not len(derived.left):
        raise MalformedEvent("bad_derived", "join rows of a member block need both sides' pairs")
    return derived.left, derived.right
