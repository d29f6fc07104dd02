"""Capture through ``spark.sql.extensions`` on the real stack: a job that names nothing of
sparkprov, in a session started with the extension, sends its lineage to Kafka; ingest stores the
run complete (the extension's marker counts what its tasks sent), and the query service traces
a city's total back to the input rows that made it."""

from __future__ import annotations

from typing import Any

from capture_agent.jvm import jar_path
from examples.unchanged_job import CUSTOMERS, ORDERS
from sparkprov.query_model import Op
from tests.faults.jobs import run_job


def test_an_unchanged_job_under_the_extension_is_stored_and_traced(
    stack: Any, client: Any, tmp_path: Any
) -> None:
    report = run_job(
        "tests.integration.extension_stack_job",
        str(tmp_path),
        str(jar_path()),
        stack.settings.kafka_bootstrap,
        bootstrap=stack.settings.kafka_bootstrap,
    )
    assert dict(map(tuple, report["rows"]))["NY"] == 21.5
    run = client.wait_for_run(report["run_id"])
    assert run.complete and run.node_count > 0
    (total,) = client.find_nodes(report["run_id"], "result1", {"city": "NY"})
    tokens = [n for n in client.backward_trace([total.id]).nodes if n.op == Op.TOKEN]
    by_relation: dict[str, set[str]] = {}
    for node in tokens:
        # The sources keep the values the query reads: the orders' amounts, the customers' ids.
        value = node.attributes["amount"] if node.relation == "orders" else node.attributes["id"]
        by_relation.setdefault(node.relation, set()).add(value)
    city_of = {c[0]: c[2] for c in CUSTOMERS}
    assert by_relation == {
        "orders": {str(o[2]) for o in ORDERS if o[2] > 1.5 and city_of.get(o[1]) == "NY"},
        "customers": {str(c[0]) for c in CUSTOMERS if c[2] == "NY"},
    }
    written = client.find_nodes(report["run_id"], "enriched")
    assert len(written) == len([o for o in ORDERS if o[2] > 1.5 and o[1] in city_of])
