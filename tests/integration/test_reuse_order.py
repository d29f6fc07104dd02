"""A run's REUSES marker may reach ingest before the reused run's own markers (another
partition): the earlier run, first met as the end of REUSES, still completes with exact counts."""

from __future__ import annotations

import random
import uuid

from ingest_service.store import Flush, Store
from sparkprov.events import ReusedResult, RunComplete, RunStarted

from .batches import node_batch


def test_a_run_first_met_as_reused_still_completes(neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    store = Store(neo4j_driver)
    earlier, later = uuid.uuid4().hex, uuid.uuid4().hex
    reused = (ReusedResult("sink", "v1", earlier),)
    store.write(
        Flush.of(
            [
                RunStarted(later, "reuse-order", 1, ""),
                RunComplete(later, "reuse-order", 0, 0, False, "", 2, None, reused),
            ]
        )
    )
    node = random.randrange(1, 2**62)
    result = store.write(
        Flush.of(
            [
                RunStarted(earlier, "reuse-order", 0, ""),
                node_batch(earlier, node, ("main",), "reuse-order"),
                RunComplete(earlier, "reuse-order", 1, 0, False, "", 1),
            ]
        )
    )
    assert earlier in result.completed_runs
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (:Run {run_id: $later})-[:REUSES]->(r:Run {run_id: $earlier}) "
        "RETURN r.stored_nodes AS nodes, r.complete AS complete",
        later=later,
        earlier=earlier,
    )
    assert [(r["nodes"], r["complete"]) for r in records] == [(1, True)]
