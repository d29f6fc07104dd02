"""Capture points ("taps"): where Spark hands lineage to Python, one Arrow batch at a time.

A tap is a non-deterministic pandas UDF used as an always-true filter on the hidden lineage
columns of a frame. Spark ships only those columns to Python (JVM-side expressions computed
every id before), the tap turns each Arrow batch into a few columnar protobuf messages without any
per-record Python call of ours, and publishes them from the executor. Being non-deterministic,
the filter is never pushed down, merged or pruned by the optimizer, and it runs inside the user's
own job: no second computation.

Each spec says which nodes and edges one batch of rows yields (../shared/MODEL.md, section 2).
"""

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from sparkprov import defaults, limits
from sparkprov.derived import MemberColumns, derive, position_labels, salt_of
from sparkprov.events import EdgeColumns, NodeColumns, encode_batch, truncate_values

__all__ = [
    "AntiJoinSpec",
    "BlackBoxGroupSpec",
    "BlackBoxSpec",
    "ExplodeSpec",
    "GroupSpec",
    "ModuleRowSpec",
    "StateSpec",
    "HIDDEN_PREFIX",
    "ID",
    "JoinSpec",
    "MemberSpec",
    "PlusSpec",
    "SemiJoinSpec",
    "SourceSpec",
    "TapSpec",
    "TapContext",
    "WindowRowSpec",
    "derive",
    "id_column",
    "make_tap",
    "salt_of",
    "null_flag",
]

HIDDEN_PREFIX = "__sp_"
TAP_PREFIX = "sparkprov_tap"  # name of our UDFs, so that plan inspection can tell them apart
ID = HIDDEN_PREFIX + "id"  # the id of the row's provenance node, on every tracked frame


NULL_FLAG = "__null"  # suffix of the flag column that stands beside a nullable id column


def null_flag(column: str) -> str:
    """The name of the boolean column that says where the id column ``column`` is null.

    Arrow hands pandas an int64 column with nulls as float64, which rounds every id above 2^53
    (xxhash64 ids nearly all are). So a nullable id column never travels with its nulls: the
    session sends it with nulls replaced by 0, plus this flag (see CaptureContext.apply_tap).
    """
    return column + NULL_FLAG


def id_column(pdf: pd.DataFrame, column: str, *, nullable: bool = False) -> np.ndarray:
    """An id column as int64 (the encoder writes the array's bytes: no Python int per id).

    Ids never pass through a float: int64, or pandas' nullable Int64 (which Spark 4.3 hands over
    for nullable columns by default) without a missing value, is taken exactly; any other dtype
    is refused, never cast. A null id where the spec expects none is refused too (``nullable``:
    the caller masks with :func:`_present`)."""
    series = pdf[column]
    exact = series.dtype == np.int64 or (
        isinstance(series.dtype, pd.Int64Dtype) and not series.isna().any()
    )
    if not exact:
        raise TypeError(
            f"id column {column!r} arrived as {series.dtype}"
            f"{' with missing values' if series.dtype != object and series.isna().any() else ''}"
            ": ids must never pass through a float (a nullable id column must be sent with its "
            "null flag)"
        )
    if not nullable and null_flag(column) in pdf and pdf[null_flag(column)].to_numpy().any():
        raise ValueError(f"id column {column!r} holds nulls where every row needs an id")
    ids: np.ndarray = series.to_numpy(dtype=np.int64)
    return ids


def _present(pdf: pd.DataFrame, column: str) -> np.ndarray:
    """Where the id column ``column`` holds an id (its null flag, if it was sent one)."""
    flag = null_flag(column)
    if flag in pdf:
        present: np.ndarray = ~pdf[flag].to_numpy(dtype=bool)
        return present
    return np.ones(len(pdf), dtype=bool)


def _id_arrays(values: pd.Series, column: str) -> list[np.ndarray]:
    """An array-of-ids column as int64 arrays, refusing any that came as floats."""
    arrays = []
    for value in values:
        if value is None:
            raise ValueError(f"id array column {column!r} holds a null array")
        array = np.asarray(value)
        if array.size and array.dtype != np.int64:
            raise TypeError(
                f"id array column {column!r} arrived as {array.dtype}, not int64: ids must never "
                "pass through a float"
            )
        arrays.append(array.astype(np.int64, copy=False))
    return arrays


def _strings(series: pd.Series) -> list[str]:
    """A column without nulls as text. The taps' value columns are cast to string by Spark, so
    an object column already holds ``str``: no second pass."""
    if series.dtype == object:
        return series.tolist()  # type: ignore[no-any-return]
    return series.astype(str).tolist()  # type: ignore[no-any-return]


def _value_texts(series: pd.Series) -> list[str | None]:
    """An aggregated column as text, None where null (as :func:`_strings` on the non-null)."""
    if series.dtype == object and not series.hasnans:
        return series.tolist()  # type: ignore[no-any-return]
    present = series.notna().to_numpy()
    texts = iter(_strings(series[present]))
    return [next(texts) if p else None for p in present.tolist()]


def _texts(series: pd.Series) -> list[str | None]:
    values: list[str | None] = series.tolist()
    if series.dtype == object and not series.hasnans:
        return values  # strings from Spark, no null (the common case: no second pass)
    missing = series.isna().to_numpy().tolist()
    return [None if m else v for v, m in zip(values, missing, strict=True)]


@dataclass(frozen=True)
class TapSpec:
    """What one tap emits. ``attributes`` are the relation's columns whose values nodes keep."""

    key: str
    relation: str = ""
    attributes: tuple[str, ...] = ()
    # values="read": the JVM taps keep only the attributes the query reads after the tap
    # (io.sparkprov.capture.ValuesPruning); the Python taps keep them all.
    values_read: bool = False

    def hidden_inputs(self) -> tuple[str, ...]:
        raise NotImplementedError

    def id_inputs(self) -> tuple[str, ...]:
        """The hidden inputs that hold ids (the others hold values as text, or flags)."""
        return tuple(
            name
            for name in self.hidden_inputs()
            if not (name in ("element", "first") or name[0] == "x" and name[1:].isdigit())
        )

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        raise NotImplementedError

    def wire(
        self, pdf: pd.DataFrame
    ) -> tuple[list[NodeColumns], EdgeColumns | None, list[MemberColumns]]:
        """What the tap sends for a batch: :meth:`emit`'s nodes and edges, unless a spec has a
        compact record whose expansion (``sparkprov.derived``) the reader computes."""
        nodes, edges = self.emit(pdf)
        return nodes, edges, []

    def _row_nodes(self, op: str, label: str, pdf: pd.DataFrame, **extra: Any) -> NodeColumns:
        attributes = {name: _texts(pdf[f"a{i}"]) for i, name in enumerate(self.attributes)}
        return NodeColumns(
            op=op,
            ids=id_column(pdf, "id"),
            label=label,
            relation=self.relation,
            attributes=attributes,
            **extra,
        )


@dataclass(frozen=True)
class SourceSpec(TapSpec):
    """A source row becomes a TOKEN labelled ``relation#row``."""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "rowno")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        labels = position_labels(self.relation, id_column(pdf, "rowno"))
        return [self._row_nodes("TOKEN", "", pdf, labels=labels)], None


@dataclass(frozen=True)
class PlusSpec(TapSpec):
    """A named row that no operator gave a fresh node: a PLUS node over its provenance.
    ``origins``: the source whose TOKEN ids the parents are, if known (the JVM tap then sends
    the parents as positions)."""

    origins: tuple[str, ...] = ()

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "parent")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        return [self._row_nodes("PLUS", "+", pdf)], EdgeColumns(
            id_column(pdf, "parent"), id_column(pdf, "id")
        )


@dataclass(frozen=True)
class BlackBoxSpec(PlusSpec):
    """A row whose values a Python UDF computed: a BLACK_BOX node labelled with the function's
    name, fed by the row it was computed from."""

    label: str = ""

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        return [self._row_nodes("BLACK_BOX", self.label, pdf)], EdgeColumns(
            id_column(pdf, "parent"), id_column(pdf, "id")
        )


@dataclass(frozen=True)
class BlackBoxGroupSpec(TapSpec):
    """Output rows of a pandas function over groups: a BLACK_BOX node per row, fed by every
    input row of its group (``members``: an array of ids per row)."""

    label: str = ""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "members")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        members = _id_arrays(pdf["members"], "members")
        counts = np.array([len(m) for m in members], dtype=np.int64)
        src = np.concatenate(members) if members else np.empty(0, dtype=np.int64)
        dst = np.repeat(ids, counts)
        return [self._row_nodes("BLACK_BOX", self.label, pdf)], EdgeColumns(src, dst)


@dataclass(frozen=True)
class JoinSpec(TapSpec):
    """A joined row: TIMES of its left and right rows (of its one side, in an outer join).
    ``origins``: per side, the capture key of the source whose TOKEN ids it holds, if known (the
    JVM tap then sends that side as positions; the ids read back the same either way)."""

    origins: tuple[str, str] = ("", "")

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "left", "right")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        left = id_column(pdf, "left", nullable=True)
        right = id_column(pdf, "right", nullable=True)
        has_left, has_right = _present(pdf, "left"), _present(pdf, "right")
        # a row joined with itself (one source on both sides) is one parent: one edge from it
        has_right &= ~(has_left & (left == right))
        src = np.concatenate([left[has_left], right[has_right]])
        dst = np.concatenate([ids[has_left], ids[has_right]])
        return [self._row_nodes("TIMES", "·", pdf)], EdgeColumns(src, dst)


@dataclass(frozen=True)
class SemiJoinSpec(TapSpec):
    """A row a left semi join kept: TIMES of its left row and the sum of the right rows that
    matched it, r·(s1 + ... + sn): a PLUS node over the matches, or the match itself when it is
    the only one (r·s1, the shape of an inner join's row). ``witnesses``: the matches' ids."""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "left", "witnesses")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        matches = _id_arrays(pdf["witnesses"], "witnesses")
        counts = np.array([len(m) for m in matches], dtype=np.int64)
        if (counts == 0).any():
            raise ValueError("a semi join kept a row without a matching right row")
        single = counts == 1
        sums = derive(ids[~single], salt_of(self.key, "plus"))
        flat = np.concatenate(matches) if matches else np.empty(0, dtype=np.int64)
        first = np.cumsum(counts) - counts  # where each row's matches start in ``flat``
        left = id_column(pdf, "left")
        # a row whose one match is itself is one parent: one edge from it
        other = single & (flat[first] != left) if len(flat) else single
        nodes = [self._row_nodes("TIMES", "·", pdf)]
        if len(sums):
            nodes.append(NodeColumns("PLUS", sums, label="+"))
        src = [left, flat[first[other]], sums, flat[np.repeat(~single, counts)]]
        dst = [ids, ids[other], ids[~single], np.repeat(sums, counts[~single])]
        return nodes, EdgeColumns(np.concatenate(src), np.concatenate(dst))


EXCLUDED_LABEL = "▷"  # the anti join's symbol


@dataclass(frozen=True)
class AntiJoinSpec(TapSpec):
    """Every left row of a left anti join, with the smallest id among the right rows that match
    it (``right``, null where none does). A row without a match is kept and keeps its
    provenance: nothing is emitted for it. An excluded row (one with a match) gets an EXCLUDED
    node (``id``, derived from the left row), fed by the left row and that right row, whose
    value is the right row's id as text (so a reader tells the two parents apart). The node has
    no child: it is no output's provenance, it records why a row is *not* in the output
    (docs/capture.md, "Semi and anti joins")."""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "left", "right")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        present = _present(pdf, "right")
        ids = id_column(pdf, "id")[present]
        left = id_column(pdf, "left")[present]
        right = id_column(pdf, "right", nullable=True)[present]
        texts = [str(r) for r in right.tolist()]
        nodes = [NodeColumns("EXCLUDED", ids, label=EXCLUDED_LABEL, values=texts)]
        other = right != left  # a row excluded by itself: one edge from it
        return nodes, EdgeColumns(
            np.concatenate([left, right[other]]), np.concatenate([ids, ids[other]])
        )


@dataclass(frozen=True)
class ExplodeSpec(TapSpec):
    """A generated row (explode & co.): TIMES of the parent row and a VALUE node of the element."""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "parent", "element_id", "element")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        present = pdf["element"].notna().to_numpy()
        elements = id_column(pdf, "element_id")[present]
        texts = pdf["element"][present].astype(str).tolist()
        nodes = [
            self._row_nodes("TIMES", "·", pdf),
            NodeColumns("VALUE", elements, labels=texts, values=texts),
        ]
        src = np.concatenate([id_column(pdf, "parent"), elements])
        dst = np.concatenate([ids, ids[present]])
        return nodes, EdgeColumns(src, dst)


@dataclass(frozen=True)
class ModuleRowSpec(TapSpec):
    """A module input or output row: TIMES of the row and the module invocation."""

    module: int = 0

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "parent")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        module = np.full(len(ids), self.module, dtype=np.int64)
        return [self._row_nodes("TIMES", "·", pdf)], EdgeColumns(
            np.concatenate([id_column(pdf, "parent"), module]), np.concatenate([ids, ids])
        )


@dataclass(frozen=True)
class StateSpec(TapSpec):
    """A module state tuple: its TOKEN (same id in every invocation and run, so shared) and the
    state node, TIMES of the token and the invocation. The token keeps the values."""

    module: int = 0

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "token")

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        tokens = id_column(pdf, "token")
        labels = [f"{self.relation}#{t & 0xFFFFFFFF:08x}" for t in tokens.tolist()]
        token_nodes = NodeColumns(
            op="TOKEN",
            ids=tokens,
            labels=labels,
            relation=self.relation,
            attributes={name: _texts(pdf[f"a{i}"]) for i, name in enumerate(self.attributes)},
            shared=True,
        )
        ids = id_column(pdf, "id")
        state_nodes = NodeColumns("TIMES", ids, label="·")
        module = np.full(len(ids), self.module, dtype=np.int64)
        return [token_nodes, state_nodes], EdgeColumns(
            np.concatenate([tokens, module]), np.concatenate([ids, ids])
        )


@dataclass(frozen=True)
class MemberSpec(TapSpec):
    """Group members, before the aggregation: member -> DELTA edges and, per aggregated column,
    a VALUE and a TENSOR node per member whose value is not null, wired to the AGGREGATE node.

    They travel as one compact record per chunk (:meth:`members`, a ``MemberColumns``): every
    TENSOR and VALUE id is derived, so the reader expands the record into exactly :meth:`emit`'s
    nodes and edges (``sparkprov.derived``, one definition for both sides)."""

    aggregates: int = 0
    group_key: str = ""  # the GroupSpec's key: both derive the AGGREGATE ids from it
    delta: bool = True  # False for window partitions: they have no DELTA node
    # Where the members are a join's rows: that join's key and origins (inputs "left" and
    # "right" then hold its pairs); where they are a source's rows, that source's key. The JVM tap
    # then sends the members as positions (lineage.proto's DerivedIds); the ids are the same.
    pair_key: str = ""
    origins: tuple[str, ...] = ()
    # The join's rows travel with its members (it has no capture point of its own): each member
    # is a TIMES node of its pair (lineage.proto, MemberBlock.join_rows). Set for the JVM taps
    # only (capture_agent.frame.materialize_with_origin), which send it as kind "join_member".
    join_rows: bool = False
    # Aggregates of one input share its value input: per aggregated column, the k of its input
    # x<k> (the JVM tap sends each once: lineage.proto's MemberBlock.value_of); () where
    # column i is x<i>.
    value_of: tuple[int, ...] = ()

    def value_input(self, i: int) -> str:
        """The hidden input that holds aggregated column ``i``'s member values."""
        return f"x{self.value_of[i] if self.value_of else i}"

    def hidden_inputs(self) -> tuple[str, ...]:
        pair = ("left", "right") if self.pair_key else ()
        distinct = max(self.value_of) + 1 if self.value_of else self.aggregates
        return ("id", "group", *[f"x{k}" for k in range(distinct)], *pair)

    def members(self, pdf: pd.DataFrame) -> MemberColumns:
        texts: dict[str, list[str | None]] = {}
        for i in range(self.aggregates):
            name = self.value_input(i)
            if name not in texts:
                texts[name] = _value_texts(pdf[name])
        return MemberColumns(
            group_key=self.group_key,
            members=id_column(pdf, "id"),
            groups=id_column(pdf, "group"),
            delta=self.delta,
            values=[texts[self.value_input(i)] for i in range(self.aggregates)],
        )

    def wire(
        self, pdf: pd.DataFrame
    ) -> tuple[list[NodeColumns], EdgeColumns | None, list[MemberColumns]]:
        return [], None, [self.members(pdf)]

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        """The expanded nodes and edges (what the reader makes of :meth:`members`)."""
        expansion = self.members(pdf).expand()
        nodes = [
            NodeColumns(d.op, d.ids, label=d.label, labels=d.texts, values=d.texts)
            for d in expansion.nodes
        ]
        if not self.delta and not self.aggregates:
            return nodes, None
        return nodes, EdgeColumns(expansion.src, expansion.dst)


@dataclass(frozen=True)
class WindowRowSpec(TapSpec):
    """A row with window aggregates over its whole partition: a TIMES node of the row and the
    partition's AGGREGATE nodes (one per aggregated column, fed by the members' tensors, which a
    MemberSpec without DELTA emits). The partition's first row by id publishes the AGGREGATEs."""

    functions: tuple[str, ...] = ()
    group_key: str = ""

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", "parent", "group", "first", *[f"x{i}" for i in range(len(self.functions))])

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        ids = id_column(pdf, "id")
        groups = id_column(pdf, "group")
        first = pdf["first"].to_numpy(dtype=bool)
        nodes = [self._row_nodes("TIMES", "·", pdf)]
        src = [id_column(pdf, "parent")]
        dst = [ids]
        for i, function in enumerate(self.functions):
            aggregates = derive(groups, salt_of(self.group_key, i, "aggregate"))
            texts = [("null" if v is None else v) for v in _texts(pdf[f"x{i}"][first])]
            nodes.append(NodeColumns("AGGREGATE", aggregates[first], label=function, values=texts))
            src.append(aggregates)
            dst.append(ids)
        return nodes, EdgeColumns(np.concatenate(src), np.concatenate(dst))


@dataclass(frozen=True)
class GroupSpec(TapSpec):
    """Groups, after the aggregation: a DELTA row node per group and an AGGREGATE node per
    aggregated column carrying the computed value, feeding the row node."""

    functions: tuple[str, ...] = ()

    def hidden_inputs(self) -> tuple[str, ...]:
        return ("id", *[f"x{i}" for i in range(len(self.functions))])

    def emit(self, pdf: pd.DataFrame) -> tuple[list[NodeColumns], EdgeColumns | None]:
        nodes = [self._row_nodes("DELTA", "δ", pdf)]
        groups = id_column(pdf, "id")
        src: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
        dst: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
        for i, function in enumerate(self.functions):
            aggregates = derive(groups, salt_of(self.key, i, "aggregate"))
            texts = [("null" if v is None else v) for v in _texts(pdf[f"x{i}"])]
            nodes.append(NodeColumns("AGGREGATE", aggregates, label=function, values=texts))
            src.append(aggregates)
            dst.append(groups)
        return nodes, EdgeColumns(np.concatenate(src), np.concatenate(dst))


@dataclass(frozen=True)
class TapContext:
    """Everything a tap needs on the executor; pickled into the UDF."""

    run_id: str
    workflow: str
    emitter: Any  # capture_agent.emitters.Emitter
    counts: Any  # pyspark Accumulator of {(tap, partition): (nodes, edges)}
    rows_per_message: int = defaults.ROWS_PER_MESSAGE


# The characters of texts (and entries of id arrays) at which a chunk ends before its
# rows_per_message do: a UTF-8 character takes up to 4 bytes, so a chunk's texts stay within
# half of the largest message (sparkprov.events.MAX_EVENT_BYTES), as the JVM taps' do
# (capture_jar's Chunk.MAX_OBJECT_BYTES).
MAX_CHUNK_TEXT_CHARS = 1 << 20


def chunk_bounds(pdf: pd.DataFrame, rows: int) -> list[tuple[int, int]]:
    """Where a batch's chunks (one message each) begin and end: ``rows`` rows each, fewer where
    their texts (each counted up to MAX_TEXT_BYTES) reach MAX_CHUNK_TEXT_CHARS first, so that
    rows of large values make more messages, none the broker refuses; at least one row each."""
    n = len(pdf)
    sizes = np.zeros(n, dtype=np.int64)
    for name in pdf.columns:
        column = pdf[name]
        if column.dtype != object:
            continue
        try:
            lengths = column.str.len()  # texts, and id arrays (lists)
        except AttributeError:  # objects of other types: not a text of the message
            continue
        sizes += lengths.fillna(0).clip(upper=limits.MAX_TEXT_BYTES).to_numpy(dtype=np.int64)
    bounds = []
    start = 0
    while start < n:
        end = min(start + rows, n)
        reached = np.searchsorted(sizes[start:end].cumsum(), MAX_CHUNK_TEXT_CHARS, side="left")
        end = min(end, start + int(reached) + 1)
        bounds.append((start, end))
        start = end
    return bounds


def make_tap(spec: TapSpec, ctx: TapContext, split: tuple[str, ...] = ()) -> Any:
    """The pandas UDF (iterator of batches) publishing ``spec``'s lineage; keeps every row.
    Its nodes carry the split path ``split`` (CSProv), unless a block names its own."""
    from pyspark import TaskContext
    from pyspark.sql.pandas.functions import pandas_udf
    from pyspark.sql.types import BooleanType

    def tap(batches: Iterator[pd.DataFrame]) -> Iterator[pd.Series]:
        task = TaskContext.get()
        partition = task.partitionId() if task is not None else -1
        key = f"{ctx.run_id}/{spec.key}/{partition}".encode()
        sender = ctx.emitter.sender(key)
        n_nodes = n_edges = sequence = 0
        min_id: int | None = None
        step = ctx.rows_per_message
        for pdf in batches:
            if len(pdf):
                low = int(pdf["id"].min())
                min_id = low if min_id is None else min(min_id, low)
            for start, end in chunk_bounds(pdf, step):
                chunk = pdf.iloc[start:end]
                nodes, edges, members = spec.wire(chunk)
                nodes, members = truncate_values(nodes, members)
                if split:
                    nodes = [b if b.split else replace(b, split=split) for b in nodes]
                    members = [m if m.split else replace(m, split=split) for m in members]
                sender.send(
                    encode_batch(
                        ctx.run_id,
                        ctx.workflow,
                        spec.key,
                        partition,
                        sequence,
                        nodes,
                        edges,
                        members=members,
                    )
                )
                sequence += 1
                # The reader stores the members' expansion: count it, without expanding.
                n_nodes += sum(len(block.ids) for block in nodes if not block.shared)
                n_nodes += sum(m.node_count for m in members)
                n_edges += len(edges.src) if edges is not None else 0
                n_edges += sum(m.edge_count for m in members)
            yield pd.Series(np.ones(len(pdf), dtype=bool))
        sender.close()
        # Keyed by the tap and the smallest row id, which names the partition's rows whatever
        # task ran them and in whatever order a shuffle delivered them (a cartesian product
        # computes each input partition in several tasks; a retry or a second job recomputes
        # it): the same rows are never counted twice.
        if min_id is not None:
            ctx.counts.add({(spec.key, min_id): (n_nodes, n_edges)})

    tap.__name__ = f"{TAP_PREFIX}_{spec.key}"
    return pandas_udf(tap, BooleanType()).asNondeterministic()  # type: ignore[call-overload]
