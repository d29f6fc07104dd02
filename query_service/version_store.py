"""The Cypher of workflow versions (schema in docs/versions.md), always parameterized.

Reads what the ingest service wrote (ingest_service.versions): ``(:Version)-[:OF]->(:Workflow)``,
``(:Run)-[:OF_VERSION]->(:Version)``, and the rows of a named relation in a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import neo4j

from sparkprov.events import ATTRIBUTE_PREFIX
from sparkprov.workflow import WorkflowDag

__all__ = ["EqualRows", "Row", "StoredVersion", "VersionStore"]

_VERSIONS = """
MATCH (v:Version)-[:OF]->(:Workflow {name: $workflow})
OPTIONAL MATCH (r:Run)-[:OF_VERSION]->(v)
WITH v, r ORDER BY r.run_id
RETURN v, collect(r.run_id) AS runs ORDER BY v.seq
"""
_VERSION = """
MATCH (v:Version {key: $key})
OPTIONAL MATCH (r:Run)-[:OF_VERSION]->(v)
WITH v, r ORDER BY r.run_id
RETURN v, collect(r.run_id) AS runs
"""
_RUN_VERSION = """
MATCH (r:Run {run_id: $run})
OPTIONAL MATCH (r)-[:OF_VERSION]->(v:Version)
RETURN r.workflow AS workflow, v AS v
"""
_ROWS = """
MATCH (n:Node {run_id: $run, relation: $relation})
WITH n ORDER BY n.id LIMIT $limit
RETURN n.id AS id, properties(n) AS props
"""
_EQUAL_ROWS = """
UNWIND $ids AS i
MATCH (n:Node {id: i})
MATCH (r0:Run {run_id: n.run_id})
WITH i, n, r0, [k IN keys(n) WHERE k STARTS WITH $prefix] AS ks
MATCH (r:Run {workflow: r0.workflow})
MATCH (m:Node {run_id: r.run_id, relation: n.relation})
WHERE all(k IN ks WHERE m[k] = n[k])
  AND size([k IN keys(m) WHERE k STARTS WITH $prefix]) = size(ks)
OPTIONAL MATCH (r)-[:OF_VERSION]->(v:Version)
WITH i, n, r0, coalesce(v.id, '') AS version, r.run_id AS run ORDER BY run
RETURN i AS id, properties(n) AS props, r0.workflow AS workflow, version,
       collect(DISTINCT run) AS runs
ORDER BY id, version
"""
_FOUND = "UNWIND $ids AS i MATCH (n:Node {id: i}) RETURN n.id AS id, n.relation AS relation"


@dataclass(frozen=True)
class StoredVersion:
    workflow: str
    version_id: str
    seq: int
    dag: WorkflowDag
    run_ids: list[str]
    created_unix_ms: int


@dataclass(frozen=True)
class Row:
    node_id: int
    attributes: dict[str, str]


@dataclass(frozen=True)
class EqualRows:
    node_id: int
    workflow: str
    relation: str
    attributes: dict[str, str]
    version_id: str
    run_ids: list[str]


def _attributes(props: Mapping[str, Any]) -> dict[str, str]:
    return {
        key[len(ATTRIBUTE_PREFIX) :]: str(value)
        for key, value in props.items()
        if key.startswith(ATTRIBUTE_PREFIX)
    }


def _version(record: neo4j.Record) -> StoredVersion:
    v = record["v"]
    return StoredVersion(
        workflow=v["workflow"],
        version_id=v["id"],
        seq=v["seq"],
        dag=WorkflowDag.from_json(v["dag"]),
        run_ids=list(record.get("runs") or []),
        created_unix_ms=v.get("created_unix_ms") or 0,
    )


class VersionStore:
    """Reads versions, runs' versions and relation rows; shares the query service's driver."""

    def __init__(self, driver: neo4j.Driver) -> None:
        self._driver = driver

    def _read(self, query: str, **params: Any) -> list[neo4j.Record]:
        records, _, _ = self._driver.execute_query(
            query, parameters_=params, routing_=neo4j.RoutingControl.READ
        )
        return records

    def versions(self, workflow: str) -> list[StoredVersion]:
        return [_version(r) for r in self._read(_VERSIONS, workflow=workflow)]

    def version(self, workflow: str, version_id: str) -> StoredVersion | None:
        records = self._read(_VERSION, key=f"{workflow}/{version_id}")
        return _version(records[0]) if records else None

    def run_version(self, run_id: str) -> tuple[bool, StoredVersion | None]:
        """(whether the run exists, its version if it recorded one)."""
        records = self._read(_RUN_VERSION, run=run_id)
        if not records:
            return False, None
        record = records[0]
        return True, (None if record["v"] is None else _version(record))

    def rows(self, run_id: str, relation: str, limit: int) -> list[Row]:
        return [
            Row(r["id"], _attributes(r["props"]))
            for r in self._read(_ROWS, run=run_id, relation=relation, limit=limit)
        ]

    def found(self, ids: list[int]) -> dict[int, str]:
        """The ids that are stored nodes, with their relation ("" when none)."""
        return {r["id"]: r["relation"] or "" for r in self._read(_FOUND, ids=ids)}

    def equal_rows(self, ids: list[int]) -> list[EqualRows]:
        """Per node, per version: the runs of its workflow whose same relation has a row with
        the same attributes."""
        return [
            EqualRows(
                node_id=r["id"],
                workflow=r["workflow"] or "",
                relation=r["props"].get("relation") or "",
                attributes=_attributes(r["props"]),
                version_id=r["version"],
                run_ids=list(r["runs"]),
            )
            for r in self._read(_EQUAL_ROWS, ids=ids, prefix=ATTRIBUTE_PREFIX)
        ]
