"""Lipstick's workflow model: a ``with prov.module(name)`` block is one module invocation.

The invocation is an OP_MODULE node (the one node the driver publishes itself: one per
invocation, not per row). Rows entering through :meth:`Invocation.input` get a module-input node,
state tuples from :meth:`Invocation.state` a state node, rows leaving through
:meth:`Invocation.output` a module-output node: each TIMES of the row and the invocation. A state
tuple's TOKEN is a hash of the workflow, the relation and the tuple's values, so the same tuple
keeps the same token in every invocation and in every later run of the workflow: provenance spans
executions (Lipstick section 2).
"""

from __future__ import annotations

import hashlib
from types import TracebackType
from typing import TYPE_CHECKING

from capture_agent.frame import (
    TrackedFrame,
    Values,
    chosen,
    fresh,
    materialize,
    reads,
    tracked_frame,
)
from capture_agent.openlineage import schema_fields
from capture_agent.origin import internal_calls
from capture_agent.taps import HIDDEN_PREFIX, ID, ModuleRowSpec, StateSpec
from sparkprov.limits import check_name

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.context import CaptureContext

__all__ = ["Invocation"]


def _stable_id(*parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Invocation:
    """One invocation of module ``name``; use as a context manager."""

    def __init__(self, ctx: CaptureContext, name: str) -> None:
        if not name:
            raise ValueError("a module needs a name")
        check_name("module", name)
        self.name = name
        self._ctx = ctx
        self.key = f"module:{name}#{ctx.index()}"
        self.node_id = _stable_id(ctx.run_id, self.key)

    def __enter__(self) -> Invocation:
        self._ctx.enter_module(self.name, self.key, self.node_id)
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ctx.exit_module()

    @internal_calls
    def input(self, frame: TrackedFrame, relation: str, values: Values = "all") -> TrackedFrame:
        """A tracked frame entering the module: a module-input node per row, named ``relation``."""
        return self._row_nodes(tracked_frame(frame, "module input"), relation, "input", values)

    @internal_calls
    def output(self, frame: TrackedFrame, relation: str, values: Values = "all") -> TrackedFrame:
        """A tracked frame leaving the module: a module-output node per row, named ``relation``."""
        self._ctx.datasets.named[relation] = None
        self._ctx.datasets.schema(relation, frame.visible_schema())
        return self._row_nodes(tracked_frame(frame, "module output"), relation, "output", values)

    def _row_nodes(
        self, frame: TrackedFrame, relation: str, role: str, values: Values
    ) -> TrackedFrame:
        key = self._ctx.next_key(f"{self.key}:{role}:{relation}")
        attributes = chosen(frame.columns, values)
        spec = ModuleRowSpec(
            key=key,
            relation=relation,
            attributes=attributes,
            module=self.node_id,
            values_read=reads(values),
        )
        out = fresh(frame, materialize(frame), spec)
        out.dag_node = self._ctx.dag.add(
            f"module_{role}",
            {"module": self.name, "relation": relation},
            [frame.dag_node],
            out.visible_schema(),
        )
        return out

    @internal_calls
    def state(self, df: DataFrame, relation: str, values: Values = "all") -> TrackedFrame:
        """A state relation of the module (a set: duplicate tuples are one tuple). Each tuple's
        TOKEN is the same in every invocation and run; each gets a state node here."""
        from pyspark.sql import functions as F

        session = self._ctx
        session.datasets.read[relation] = None
        session.datasets.schema(relation, schema_fields(df.schema))
        columns = [c for c in df.columns]
        for c in columns:
            if c.startswith(HIDDEN_PREFIX):
                raise ValueError(f"column {c!r} uses the prefix reserved for provenance")
        key = session.next_key(f"{self.key}:state:{relation}")
        content: list[Column] = []
        for c in columns:
            content += [F.col(c), F.col(c).isNull()]
        token_col = HIDDEN_PREFIX + "token"
        tracked = df.dropDuplicates().withColumn(
            token_col,
            F.xxhash64(F.lit(session.workflow), F.lit("state"), F.lit(relation), *content),
        )
        tracked = tracked.withColumn(ID, session.node_id(key, F.col(token_col)))
        attributes = chosen(columns, values)
        spec = StateSpec(key=key, relation=relation, attributes=attributes, module=self.node_id)
        out = TrackedFrame(session, tracked, spec, {"token": F.col(token_col)})
        out.dag_node = session.dag.add(
            "module_state", {"module": self.name, "relation": relation}, [], out.visible_schema()
        )
        return out
