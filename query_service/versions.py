"""Workflow versions answered: list, diff, which versions made these rows (Drove's Q1), how two
runs' results differ and why (Q2), and whether two versions' sinks are equivalent.

Results are compared as bags of rows: a row is its relation's attribute values; a run's result
holds each row as many times as the relation has nodes with those values. A row only in one
result is explained by the source rows (TOKENs) of its backward trace and by the operators of
the edit between the two runs' versions that lie on a path from those sources' relations to the
compared relation, in either version's DAG: what the row went through (or would have) that
changed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from query_service.model import Direction, InvalidArgument, NodeView, NotFound
from query_service.store import GraphStore
from query_service.traces import TraceQuery, run
from query_service.version_store import EqualRows, Row, StoredVersion, VersionStore
from sparkprov.equivalence import Equivalence, Semantics, check
from sparkprov.limits import quote
from sparkprov.workflow import Edit, Operator, WorkflowDag, diff

__all__ = ["ComparedRow", "Comparison", "Versions"]

_MAX_ROWS = 1_000_000  # rows of one relation read for a comparison


@dataclass
class ComparedRow:
    attributes: dict[str, str]
    count_a: int
    count_b: int
    node_ids: list[int] = field(default_factory=list)
    sources: list[NodeView] = field(default_factory=list)
    edit_operators: list[Operator] = field(default_factory=list)


@dataclass
class Comparison:
    only_a: list[ComparedRow]
    only_b: list[ComparedRow]
    both: list[ComparedRow]
    truncated: bool


def _descendants(dag: WorkflowDag, starts: Iterable[str]) -> set[str]:
    consumers = dag.consumers()
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(consumers.get(current, []))
    return seen


def _on_paths(dag: WorkflowDag, relations: set[str], sink: Operator, ops: set[str]) -> set[str]:
    """Those of ``ops`` on a path from a source of ``relations`` to ``sink``."""
    sources = [
        o.id
        for o in dag.operators
        if o.kind in ("source", "module_state") and o.param("relation") in relations
    ]
    return _descendants(dag, sources) & dag.ancestors(sink.id) & ops


class Versions:
    def __init__(self, versions: VersionStore, store: GraphStore, max_limit: int) -> None:
        self._versions = versions
        self._store = store
        self._max_limit = max_limit

    def listed(self, workflow: str) -> list[StoredVersion]:
        if not workflow:
            raise InvalidArgument("workflow is required")
        return self._versions.versions(workflow)

    def get(self, workflow: str, version_id: str) -> StoredVersion:
        if not workflow or not version_id:
            raise InvalidArgument("workflow and both version ids are required")
        found = self._versions.version(workflow, version_id)
        if found is None:
            raise NotFound(f"workflow {quote(workflow)} has no version {quote(version_id)}")
        return found

    def diff(self, workflow: str, version_a: str, version_b: str) -> Edit:
        return diff(self.get(workflow, version_a).dag, self.get(workflow, version_b).dag)

    def equivalence(
        self,
        workflow: str,
        version_a: str,
        version_b: str,
        sink: str,
        sink_b: str,
        semantics: Semantics,
    ) -> tuple[Equivalence, float]:
        if not sink:
            raise InvalidArgument("sink (a named relation) is required")
        a, b = self.get(workflow, version_a), self.get(workflow, version_b)
        op_a, op_b = a.dag.sink(sink), b.dag.sink(sink_b or sink)
        if op_a is None:
            raise NotFound(f"version {quote(version_a)} has no relation {quote(sink)}")
        if op_b is None:
            raise NotFound(f"version {quote(version_b)} has no relation {quote(sink_b or sink)}")
        started = time.perf_counter()
        answer = check(a.dag, b.dag, op_a, op_b, semantics)
        return answer, (time.perf_counter() - started) * 1000

    def versions_of(self, ids: list[int]) -> list[EqualRows]:
        if not ids:
            raise InvalidArgument("node_ids is required")
        found = self._versions.found(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"unknown node id(s): {', '.join(str(i) for i in missing[:10])}")
        unnamed = [i for i in ids if not found[i]]
        if unnamed:
            raise InvalidArgument(
                f"node(s) {', '.join(str(i) for i in unnamed[:10])} carry no relation's row"
            )
        return self._versions.equal_rows(ids)

    def _rows(self, run_id: str, relation: str) -> tuple[list[Row], StoredVersion | None]:
        if not run_id or not relation:
            raise InvalidArgument("run_a, relation_a and run_b are required")
        exists, version = self._versions.run_version(run_id)
        if not exists:
            raise NotFound(f"unknown run {quote(run_id)}")
        rows = self._versions.rows(run_id, relation, _MAX_ROWS + 1)
        # An empty result is a result, if the run's version names the relation.
        if not rows and (version is None or version.dag.sink(relation) is None):
            raise NotFound(f"run {quote(run_id)} has no relation {quote(relation)}")
        if len(rows) > _MAX_ROWS:
            raise InvalidArgument(f"relation {quote(relation)} has more than {_MAX_ROWS} rows")
        return rows, version

    def compare(
        self, run_a: str, relation_a: str, run_b: str, relation_b: str, limit: int
    ) -> Comparison:
        if limit > self._max_limit:
            raise InvalidArgument(f"limit exceeds the maximum {self._max_limit}")
        rows_a, version_a = self._rows(run_a, relation_a)
        rows_b, version_b = self._rows(run_b, relation_b or relation_a)
        bag_a: dict[tuple[tuple[str, str], ...], list[int]] = {}
        bag_b: dict[tuple[tuple[str, str], ...], list[int]] = {}
        for bag, rows in ((bag_a, rows_a), (bag_b, rows_b)):
            for row in rows:
                bag.setdefault(tuple(sorted(row.attributes.items())), []).append(row.node_id)
        edit = (
            diff(version_a.dag, version_b.dag)
            if version_a is not None and version_b is not None
            else None
        )
        only_a: list[ComparedRow] = []
        only_b: list[ComparedRow] = []
        both: list[ComparedRow] = []
        explained = {"a": 0, "b": 0}
        truncated = False
        for key in sorted(set(bag_a) | set(bag_b)):
            ids_a, ids_b = bag_a.get(key, []), bag_b.get(key, [])
            common = min(len(ids_a), len(ids_b))
            if common:
                both.append(ComparedRow(dict(key), len(ids_a), len(ids_b)))
            for side, ids, out in (("a", ids_a, only_a), ("b", ids_b, only_b)):
                surplus = ids[common:]
                if not surplus:
                    continue
                one_sided = ComparedRow(dict(key), len(ids_a), len(ids_b), surplus)
                if explained[side] < limit:
                    explained[side] += 1
                    self._explain(one_sided, edit, version_a, version_b, relation_a, relation_b)
                else:
                    truncated = True
                out.append(one_sided)
        return Comparison(only_a, only_b, both, truncated)

    def _explain(
        self,
        row: ComparedRow,
        edit: Edit | None,
        version_a: StoredVersion | None,
        version_b: StoredVersion | None,
        relation_a: str,
        relation_b: str,
    ) -> None:
        trace = run(self._store, TraceQuery(row.node_ids, Direction.BACKWARD, limit=100_000))
        row.sources = [n for n in trace.nodes if n.op == "TOKEN"]
        if edit is None or version_a is None or version_b is None:
            return
        relations = {n.relation for n in row.sources if n.relation}
        ops: dict[str, Operator] = {}
        # Operators added, removed, changed or moved.
        side_a = {o.id for o in edit.removed} | {a.id for a, _ in (*edit.changed, *edit.moved)}
        side_b = {o.id for o in edit.added} | {b.id for _, b in (*edit.changed, *edit.moved)}
        for version, relation, side in (
            (version_a, relation_a, side_a),
            (version_b, relation_b or relation_a, side_b),
        ):
            sink = version.dag.sink(relation)
            if sink is None:
                continue
            by_id = version.dag.by_id()
            for op_id in sorted(_on_paths(version.dag, relations, sink, side)):
                ops[op_id] = by_id[op_id]
        row.edit_operators = list(ops.values())
