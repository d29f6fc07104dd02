"""mapInPandas and applyInPandas: the user's pandas function is a black box.

Every output row is a BLACK_BOX node labelled with the function's name, fed by every input row
the function saw: the rows of its group (applyInPandas) or of its partition (mapInPandas), as
Lipstick does for a black-box invocation (each output depends on all its inputs). That is
|inputs| x |outputs| edges per group or partition, so these captures suit small groups; a
partition-wide mapInPandas over millions of rows makes a graph of that product's size.

We wrap the user's function; the wrapper sees the lineage column ``__sp_id`` and the function does
not. applyInPandas: the wrapper appends to each output row its id and the group's input ids (an
array column) and a tap publishes them, so ``.named()`` can still name the BLACK_BOX nodes.
mapInPandas: the inputs of a partition are known only once the function consumed them all, after
it yielded rows, so the wrapper publishes the nodes and edges itself when the partition ends (the
result is not pending: ``.named()`` adds PLUS nodes).

Output row ids: the group's smallest input id (applyInPandas) or the partition index
(mapInPandas), the capture point and the row's position, hashed. Group inputs are sorted by id
before the call so a re-executed task sees them in the same order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from capture_agent.frame import context_of, materialize, same_nodes
from capture_agent.taps import (
    HIDDEN_PREFIX,
    ID,
    BlackBoxGroupSpec,
    TapContext,
    derive,
    id_column,
    salt_of,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

    from capture_agent.frame import TrackedFrame

__all__ = ["apply_in_pandas", "map_in_pandas"]

_MEMBERS = HIDDEN_PREFIX + "members"


def _row_ids(base: int, start: int, n: int, salt: np.uint64) -> np.ndarray:
    """Ids of ``n`` output rows at positions ``start``.. of the group/partition ``base``."""
    seed = derive(np.array([base], dtype=np.int64), salt).view(np.uint64)
    positions = np.arange(start, start + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        mixed = (seed + positions).view(np.int64)
    return derive(mixed, salt)


def _with_lineage_schema(schema: Any, fields: list[tuple[str, str]]) -> Any:
    from pyspark.sql.types import StructType, _parse_datatype_string

    parsed = schema if isinstance(schema, StructType) else _parse_datatype_string(schema)
    if not isinstance(parsed, StructType):
        raise ValueError(f"the output schema must be a struct type, not {schema!r}")
    out = StructType(list(parsed.fields))
    for name, type_ddl in fields:
        out = out.add(name, _parse_datatype_string(type_ddl))
    return out


def _label(func: Callable[..., Any]) -> str:
    return str(getattr(func, "__name__", type(func).__name__))


def apply_in_pandas(
    frame: TrackedFrame,
    keys: list[str | Column],
    func: Callable[..., pd.DataFrame],
    schema: Any,
) -> TrackedFrame:
    from pyspark.sql import functions as F

    session = context_of(frame)
    df = materialize(frame)
    key = session.next_key("applyInPandas")
    salt = salt_of(session.run_id, key, "row")
    with_key = len(inspect.signature(func).parameters) == 2

    def call(key_values: Any, pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values(ID, kind="stable")
        ids = id_column(pdf, ID)
        inputs = pdf.drop(columns=[ID]).reset_index(drop=True)
        out = func(key_values, inputs) if with_key else func(inputs)
        out = out.reset_index(drop=True)
        base = int(ids.min()) if len(ids) else 0
        out[ID] = _row_ids(base, 0, len(out), salt)
        out[_MEMBERS] = pd.Series([ids] * len(out), dtype=object)
        return out

    # Spark tells the two signatures apart by their arity.
    def with_keys(key_values: Any, pdf: pd.DataFrame) -> pd.DataFrame:
        return call(key_values, pdf)

    def without_keys(pdf: pd.DataFrame) -> pd.DataFrame:
        return call(None, pdf)

    wrapped = with_keys if with_key else without_keys
    out_schema = _with_lineage_schema(schema, [(ID, "bigint"), (_MEMBERS, "array<bigint>")])
    result = df.groupBy(*keys).applyInPandas(wrapped, out_schema)
    spec = BlackBoxGroupSpec(key=key, label=_label(func))
    from capture_agent.frame import TrackedFrame

    return TrackedFrame(session, result, spec, {"members": F.col(_MEMBERS)})


def map_in_pandas(
    frame: TrackedFrame,
    func: Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]],
    schema: Any,
) -> TrackedFrame:
    session = context_of(frame)
    df = materialize(frame)
    key = session.next_key("mapInPandas")
    salt = salt_of(session.run_id, key, "row")
    label = _label(func)
    ctx = session.tap
    split = session.split_for()

    def wrapped(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from pyspark import TaskContext

        task = TaskContext.get()
        partition = task.partitionId() if task is not None else -1
        inputs: list[np.ndarray] = []
        outputs: list[np.ndarray] = []

        def stripped() -> Iterator[pd.DataFrame]:
            for pdf in batches:
                inputs.append(id_column(pdf, ID))
                yield pdf.drop(columns=[ID])

        position = 0
        for out in func(stripped()):
            out = out.reset_index(drop=True)
            ids = _row_ids(partition, position, len(out), salt)
            position += len(out)
            outputs.append(ids)
            out[ID] = ids
            yield out
        _publish_partition(ctx, key, label, partition, inputs, outputs, split)

    out_schema = _with_lineage_schema(schema, [(ID, "bigint")])
    return same_nodes(frame, df.mapInPandas(wrapped, out_schema))


def _publish_partition(
    ctx: TapContext,
    key: str,
    label: str,
    partition: int,
    inputs: list[np.ndarray],
    outputs: list[np.ndarray],
    split: tuple[str, ...] = (),
) -> None:
    """BLACK_BOX nodes of a partition's output rows, each fed by all its input rows."""
    from sparkprov.events import EdgeColumns, NodeColumns, encode_batch

    out_ids = np.concatenate(outputs) if outputs else np.empty(0, dtype=np.int64)
    in_ids = np.concatenate(inputs) if inputs else np.empty(0, dtype=np.int64)
    if not len(out_ids):
        return
    sender = ctx.emitter.sender(f"{ctx.run_id}/{key}/{partition}".encode())
    # Messages of about rows_per_message edges (at least one output row each).
    step = max(1, ctx.rows_per_message // max(1, len(in_ids)))
    n_edges = 0
    for sequence, start in enumerate(range(0, len(out_ids), step)):
        chunk = out_ids[start : start + step]
        nodes = [NodeColumns("BLACK_BOX", chunk, label=label, split=split)]
        src = np.tile(in_ids, len(chunk))
        dst = np.repeat(chunk, len(in_ids))
        n_edges += len(src)
        edges = EdgeColumns(src, dst) if len(src) else None
        sender.send(encode_batch(ctx.run_id, ctx.workflow, key, partition, sequence, nodes, edges))
    sender.close()
    ctx.counts.add({(key, int(out_ids.min())): (len(out_ids), n_edges)})
