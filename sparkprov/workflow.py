"""Workflow versions: the operator DAG of a run, canonicalised, hashed, and diffed (Drove).

A run's workflow is the DAG of the operators its tracked frames went through (sources, filters,
projections, joins, aggregates, UDFs, named relations, module boundaries), each with its
parameters as text (predicates and expressions as Spark SQL, join keys, grouping keys and
aggregates, UDF names with a hash of their code) and the visible columns it outputs.

Canonical form: an operator's id is the hash of its kind, parameters, columns and its inputs'
ids (a Merkle hash), so the same pipeline written twice, in any order of statements, gets the
same ids whatever capture keys or counters were used; equal operators over equal inputs are one.
A version id is the hash of the canonical DAG (its operators sorted by id, and its sinks).
Equal canonical ids of two versions' operators mean identical sub-DAGs.

:func:`diff` is the edit between two versions: operators added, removed and changed (same kind
and place, other parameters), and links added and removed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "COMMUTATIVE",
    "DagBuilder",
    "Edit",
    "Operator",
    "WorkflowDag",
    "diff",
]

# Operators whose inputs' order does not matter: their canonical form sorts them.
COMMUTATIVE = frozenset({"union", "intersect"})

_ID_CHARS = 16


def _digest(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Operator:
    """One operator of a canonical DAG; ``id`` is its Merkle hash, ``inputs`` its inputs' ids
    in order (left, right for a join)."""

    id: str
    kind: str
    params: tuple[tuple[str, str], ...] = ()
    inputs: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()  # (name, Spark type) of the visible columns

    def param(self, name: str, default: str = "") -> str:
        return dict(self.params).get(name, default)

    def signature(self) -> str:
        """Kind and parameters: what an operator is, regardless of where it stands."""
        return _digest([self.kind, list(self.params)])

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params if k != "code")
        return f"{self.kind}({shown})" if shown else self.kind


@dataclass(frozen=True)
class WorkflowDag:
    """A canonical operator DAG. ``sinks`` maps a named relation to the operator that named it
    last (the sink a user asks about)."""

    operators: tuple[Operator, ...]
    sinks: tuple[tuple[str, str], ...] = ()

    @property
    def version_id(self) -> str:
        return _digest(
            [
                [[o.id, o.kind, list(o.params), list(o.inputs), list(o.columns)] for o in self.ops],
                list(self.sinks),
            ]
        )[:_ID_CHARS]

    @property
    def ops(self) -> tuple[Operator, ...]:
        return tuple(sorted(self.operators, key=lambda o: o.id))

    def by_id(self) -> dict[str, Operator]:
        return {o.id: o for o in self.operators}

    def sink(self, relation: str) -> Operator | None:
        op_id = dict(self.sinks).get(relation)
        return None if op_id is None else self.by_id()[op_id]

    def ancestors(self, op_id: str) -> set[str]:
        """``op_id`` and every operator it reads from: the sub-DAG of a sink."""
        ops = self.by_id()
        seen: set[str] = set()
        todo = [op_id]
        while todo:
            current = todo.pop()
            if current in seen or current not in ops:
                continue
            seen.add(current)
            todo.extend(ops[current].inputs)
        return seen

    def consumers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {o.id: [] for o in self.operators}
        for o in self.operators:
            for i in o.inputs:
                out.setdefault(i, []).append(o.id)
        return out

    def links(self) -> set[tuple[str, str]]:
        return {(i, o.id) for o in self.operators for i in o.inputs}

    def to_json(self) -> str:
        return json.dumps(
            {
                "operators": [
                    {
                        "id": o.id,
                        "kind": o.kind,
                        "params": dict(o.params),
                        "inputs": list(o.inputs),
                        "columns": [list(c) for c in o.columns],
                    }
                    for o in self.ops
                ],
                "sinks": dict(self.sinks),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> WorkflowDag:
        data = json.loads(text)
        operators = tuple(
            Operator(
                id=o["id"],
                kind=o["kind"],
                params=tuple(sorted(o["params"].items())),
                inputs=tuple(o["inputs"]),
                columns=tuple((c[0], c[1]) for c in o["columns"]),
            )
            for o in data["operators"]
        )
        return cls(operators, tuple(sorted(data["sinks"].items())))


@dataclass
class _Raw:
    kind: str
    params: dict[str, str]
    inputs: list[int]
    columns: list[tuple[str, str]]


@dataclass
class DagBuilder:
    """Records operators as a run builds them (``add`` returns the operator's number, which its
    consumers name as input); :meth:`dag` canonicalises what was recorded."""

    _ops: list[_Raw] = field(default_factory=list)
    _sinks: dict[str, int] = field(default_factory=dict)
    depth: int = 0  # > 0 while a recorded operator runs: the operators it calls are its own

    def add(
        self,
        kind: str,
        params: Mapping[str, str],
        inputs: Sequence[int | None],
        columns: Iterable[tuple[str, str]] = (),
    ) -> int:
        self._ops.append(
            _Raw(kind, dict(params), [i for i in inputs if i is not None], list(columns))
        )
        number = len(self._ops) - 1
        if kind in ("named", "source") and params.get("relation"):
            self._sinks[params["relation"]] = number
        return number

    def __len__(self) -> int:
        return len(self._ops)

    def dag(self) -> WorkflowDag:
        ids: list[str] = []
        operators: dict[str, Operator] = {}
        for raw in self._ops:  # inputs always precede their consumers
            inputs = [ids[i] for i in raw.inputs]
            if raw.kind in COMMUTATIVE:
                inputs.sort()
            params = tuple(sorted(raw.params.items()))
            columns = tuple(raw.columns)
            op_id = _digest([raw.kind, list(params), inputs, [list(c) for c in columns]])
            op_id = op_id[:_ID_CHARS]
            ids.append(op_id)
            operators[op_id] = Operator(op_id, raw.kind, params, tuple(inputs), columns)
        sinks = tuple(sorted((name, ids[n]) for name, n in self._sinks.items()))
        return WorkflowDag(tuple(operators.values()), sinks)


@dataclass(frozen=True)
class Edit:
    """The edit from version a to version b. Operator ids are a's for removed operators and
    links, b's for added ones; a changed operator is the pair (a's, b's)."""

    added: tuple[Operator, ...]
    removed: tuple[Operator, ...]
    changed: tuple[tuple[Operator, Operator], ...]
    # The same operator with another input: a unary operator whose input is not the one its
    # counterpart reads (a filter moved across a join).
    moved: tuple[tuple[Operator, Operator], ...]
    links_added: tuple[tuple[str, str], ...]
    links_removed: tuple[tuple[str, str], ...]

    @property
    def empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.changed
            or self.moved
            or self.links_added
            or self.links_removed
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "added": [o.describe() for o in self.added],
                "removed": [o.describe() for o in self.removed],
                "changed": [[a.describe(), b.describe()] for a, b in self.changed],
                "moved": [a.describe() for a, _ in self.moved],
                "links_added": len(self.links_added),
                "links_removed": len(self.links_removed),
            },
            sort_keys=True,
        )


def _topological(dag: WorkflowDag) -> list[Operator]:
    ops = dag.by_id()
    order: list[Operator] = []
    seen: set[str] = set()

    def visit(op_id: str) -> None:
        if op_id in seen or op_id not in ops:
            return
        seen.add(op_id)
        for i in ops[op_id].inputs:
            visit(i)
        order.append(ops[op_id])

    for o in dag.ops:
        visit(o.id)
    return order


def match(a: WorkflowDag, b: WorkflowDag) -> dict[str, str]:
    """A matching of a's operators to b's: identical sub-DAGs first, then operators of the same
    kind and parameters whose matched inputs agree, then the rest of the same signature in
    topological order."""
    b_ops = b.by_id()
    mapping = {o.id: o.id for o in a.operators if o.id in b_ops}
    used = set(mapping.values())
    b_order = _topological(b)
    for strict in (True, False):
        for o in _topological(a):
            if o.id in mapping:
                continue
            for candidate in b_order:
                if candidate.id in used or candidate.signature() != o.signature():
                    continue
                mapped_inputs = [mapping.get(i) for i in o.inputs]
                if strict and not set(mapped_inputs) & set(candidate.inputs) and o.inputs:
                    continue
                mapping[o.id] = candidate.id
                used.add(candidate.id)
                break
    return mapping


def diff(a: WorkflowDag, b: WorkflowDag) -> Edit:
    """The edit that turns version a into version b."""
    mapping = match(a, b)
    inverse = {v: k for k, v in mapping.items()}
    removed = [o for o in _topological(a) if o.id not in mapping]
    added = [o for o in _topological(b) if o.id not in inverse]
    # A removed and an added operator of one kind with a matched neighbour in common: changed.
    a_consumers, b_consumers = a.consumers(), b.consumers()
    changed: list[tuple[Operator, Operator]] = []
    for old in list(removed):
        old_neighbours = {mapping.get(i) for i in old.inputs} | {
            mapping.get(c) for c in a_consumers.get(old.id, [])
        }
        old_neighbours.discard(None)
        for new in added:
            if new.kind != old.kind:
                continue
            new_neighbours = set(new.inputs) | set(b_consumers.get(new.id, []))
            if old_neighbours & new_neighbours or (not old.inputs and not new.inputs):
                changed.append((old, new))
                removed.remove(old)
                added.remove(new)
                mapping[old.id] = new.id
                inverse[new.id] = old.id
                break
    a_ops, b_ops = a.by_id(), b.by_id()

    def relinked(x: str, y: str) -> bool:
        """A unary operator that reads another input and feeds other operators."""
        old, new = a_ops[x], b_ops[y]
        if len(old.inputs) != 1 or len(new.inputs) != 1 or old.signature() != new.signature():
            return False
        feeds = {mapping.get(c) for c in a_consumers.get(x, [])}
        return mapping.get(old.inputs[0]) != new.inputs[0] and feeds != set(b_consumers.get(y, []))

    moved = [(a_ops[x], b_ops[y]) for x, y in sorted(mapping.items()) if relinked(x, y)]
    a_links, b_links = a.links(), b.links()
    links_removed = sorted(
        (s, d)
        for s, d in a_links
        if s not in mapping or d not in mapping or (mapping[s], mapping[d]) not in b_links
    )
    links_added = sorted(
        (s, d)
        for s, d in b_links
        if s not in inverse or d not in inverse or (inverse[s], inverse[d]) not in a_links
    )
    return Edit(
        tuple(added),
        tuple(removed),
        tuple(changed),
        tuple(moved),
        tuple(links_added),
        tuple(links_removed),
    )
