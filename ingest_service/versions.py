"""Workflow versions in Neo4j: written with the run-complete marker that carries them.

Schema (docs/versions.md): ``(:Version {key, id, workflow, seq, dag})-[:OF]->(:Workflow {name})``,
``(:Run)-[:OF_VERSION]->(:Version)``, and between consecutive versions of a workflow (in the
order their first run completed) ``(:Version)-[:NEXT {added, removed, changed, links_added,
links_removed}]->(:Version)``: the edit (sparkprov.workflow.diff). A run that reused an earlier
run's stored sink result: ``(:Run)-[:REUSES {sink, version}]->(:Run)``, one per sink. ``key`` is
``workflow/version id``, so one DAG in two workflows is two versions. Every write is a MERGE on a
constrained key (the constraints: sparkprov/schema.cypher): a redelivered marker changes nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

import neo4j

from sparkprov.events import RunComplete
from sparkprov.workflow import WorkflowDag, diff

__all__ = ["version_key", "write_reuses", "write_versions"]

log = logging.getLogger(__name__)

_MERGE = """
MERGE (w:Workflow {name: $workflow})
WITH w
OPTIONAL MATCH (old:Version)-[:OF]->(w)
WITH w, count(old) AS versions
MERGE (v:Version {key: $key})
  ON CREATE SET v.id = $version, v.workflow = $workflow, v.seq = versions + 1, v.dag = $dag,
                v.operators = $operators, v.created_unix_ms = $finished
MERGE (v)-[:OF]->(w)
WITH v
MATCH (run:Run {run_id: $run})
MERGE (run)-[:OF_VERSION]->(v)
WITH v
OPTIONAL MATCH (prev:Version {workflow: $workflow, seq: v.seq - 1})
RETURN prev.key AS previous, prev.dag AS dag
"""

_EDIT = """
MATCH (p:Version {key: $previous}), (v:Version {key: $key})
MERGE (p)-[e:NEXT]->(v)
SET e.added = $added, e.removed = $removed, e.changed = $changed,
    e.links_added = $links_added, e.links_removed = $links_removed
"""


# The earlier run is MERGEd: its markers may sit on another partition and arrive later; they
# MERGE the same Run node and fill it, so it is created as ingest_service.store creates a Run
# (counts at zero, not complete), or its counts would add to null and it would never complete.
_REUSES = """
UNWIND $rows AS row
MATCH (run:Run {run_id: $run})
MERGE (earlier:Run {run_id: row.run_id})
  ON CREATE SET earlier.stored_nodes = 0, earlier.stored_edges = 0, earlier.complete = false
MERGE (run)-[u:REUSES {sink: row.sink}]->(earlier)
SET u.version = row.version
"""


def version_key(workflow: str, version_id: str) -> str:
    return f"{workflow}/{version_id}"


def write_versions(tx: neo4j.ManagedTransaction, completed: Iterable[RunComplete]) -> None:
    """Stores the version of every completed run that carries one, and the edit from the
    workflow's previous version to a new one. Runs whose Run node exists (the marker's own
    write, earlier in the same transaction)."""
    for done in completed:
        dag = done.version
        if dag is None:
            continue
        key = version_key(done.workflow, dag.version_id)
        record = tx.run(
            _MERGE,
            workflow=done.workflow,
            key=key,
            version=dag.version_id,
            dag=dag.to_json(),
            operators=len(dag.operators),
            finished=done.finished_unix_ms,
            run=done.run_id,
        ).single()
        if record is None or record["previous"] is None or record["previous"] == key:
            continue
        edit = diff(WorkflowDag.from_json(record["dag"]), dag)
        tx.run(
            _EDIT,
            previous=record["previous"],
            key=key,
            added=[o.describe() for o in edit.added],
            removed=[o.describe() for o in edit.removed],
            changed=[json.dumps([a.describe(), b.describe()]) for a, b in edit.changed],
            links_added=len(edit.links_added),
            links_removed=len(edit.links_removed),
        ).consume()
        log.debug("version %s of %s stored", dag.version_id, done.workflow)


def write_reuses(tx: neo4j.ManagedTransaction, completed: Iterable[RunComplete]) -> None:
    """Links every completed run to the runs whose stored results it reused (REUSES)."""
    for done in completed:
        if not done.reuses:
            continue
        rows = [{"sink": r.sink, "version": r.version, "run_id": r.run_id} for r in done.reuses]
        tx.run(_REUSES, run=done.run_id, rows=rows).consume()
